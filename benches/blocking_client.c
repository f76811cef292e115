/*
 * benches/blocking_client.c: the minimal blocking HTTP/1.1 client that
 * benches/wakeup.sh puts beside metronome (ENGINES="... c"): one keep-alive
 * connection, one thread; for each request i it sleeps until its intended
 * time start + i/rate (clock_nanosleep, CLOCK_MONOTONIC, absolute), sends
 * `GET / HTTP/1.1`, reads the whole response (Content-Length), and keeps the
 * latency (end - intended), the service time (end - send) and the send lag
 * (send - intended). It is the floor of a paced client with no hand-off:
 * the thread that waits for the intended time is the one that sends and
 * reads. Prints one JSON line of medians and p99s, in microseconds.
 *
 *   cc -O2 -o blocking_client benches/blocking_client.c
 *   ./blocking_client 127.0.0.1 18096 500 3
 *
 * Talks only to the address it is given (the benches give 127.0.0.1).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static double q_us(long long *v, long n, double q) {
    if (n == 0) return 0.0;
    qsort(v, n, sizeof *v, cmp);
    long r = (long)(q * n + 0.999999999);
    if (r < 1) r = 1;
    if (r > n) r = n;
    return v[r - 1] / 1e3;
}

/* Reads one response (head, then Content-Length bytes of body). */
static int read_response(int fd, char *buf, size_t cap) {
    size_t have = 0;
    for (;;) {
        ssize_t k = recv(fd, buf + have, cap - have - 1, 0);
        if (k <= 0) return -1;
        have += (size_t)k;
        buf[have] = 0;
        char *end = strstr(buf, "\r\n\r\n");
        if (!end) continue;
        size_t head = (size_t)(end - buf) + 4;
        char *cl = strcasestr(buf, "content-length:");
        size_t body = cl ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
        if (have >= head + body) return 0;
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s HOST PORT RATE SECONDS\n", argv[0]);
        return 2;
    }
    double rate = atof(argv[3]), secs = atof(argv[4]);
    long n = (long)(rate * secs);
    if (rate <= 0 || n <= 0) {
        fprintf(stderr, "rate and seconds must be positive\n");
        return 2;
    }
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)atoi(argv[2]));
    if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) {
        fprintf(stderr, "bad address %s\n", argv[1]);
        return 2;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("connect");
        return 1;
    }
    static const char req[] = "GET / HTTP/1.1\r\nHost: bench\r\n\r\n";
    static char buf[65536];
    long long *lat = malloc(n * sizeof *lat), *svc = malloc(n * sizeof *svc),
              *lag = malloc(n * sizeof *lag);
    long done = 0;
    long long start = now_ns() + 100000000LL; /* 100 ms to settle */
    for (long i = 0; i < n; i++) {
        long long due = start + (long long)((double)i * 1e9 / rate + 0.5);
        struct timespec t = {due / 1000000000LL, due % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {
        }
        long long sent = now_ns();
        if (send(fd, req, sizeof req - 1, 0) != (ssize_t)(sizeof req - 1)) break;
        if (read_response(fd, buf, sizeof buf) != 0) break;
        long long end = now_ns();
        lat[done] = end - due;
        svc[done] = end - sent;
        lag[done] = sent > due ? sent - due : 0;
        done++;
    }
    close(fd);
    printf("{\"requests\": %ld, \"ok\": %ld, \"latency_p50_us\": %.3f, \"latency_p99_us\": %.3f, "
           "\"service_p50_us\": %.3f, \"send_lag_p99_us\": %.3f}\n",
           n, done, q_us(lat, done, 0.5), q_us(lat, done, 0.99), q_us(svc, done, 0.5),
           q_us(lag, done, 0.99));
    return done == n ? 0 : 1;
}
