/*
 * The C side of tests/c_program.rs: uses every function of metronome.h.
 *
 *   histogram VALUES OUTDIR
 *
 * First it checks hand-computed numbers and the error paths (exiting 1 with
 * the failed check on stderr). Then it records the "value count" lines of
 * VALUES alternately into a heap histogram and one in caller memory, merges
 * them, prints the statistics, quantiles and buckets on stdout (the Rust test
 * compares them with metronome-core's answers for the same input), writes the
 * plain and the compressed V2 encodings to OUTDIR/plain.v2 and
 * OUTDIR/compressed.v2 (the Rust test decodes them with the hdrhistogram
 * crate), decodes both back and prints what they hold.
 */
#include <inttypes.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metronome.h"

static int failures = 0;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,  \
                    #cond);                                                    \
            failures++;                                                        \
        }                                                                      \
    } while (0)

/* Caller memory for a histogram: no allocation. */
static alignas(METRONOME_HISTOGRAM_ALIGN) unsigned char
    storage[METRONOME_HISTOGRAM_SIZE + METRONOME_HISTOGRAM_ALIGN];

static const double QUANTILES[] = {0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1.0};
#define NQ (sizeof QUANTILES / sizeof QUANTILES[0])

static void hand_checks(void) {
    CHECK(metronome_histogram_size() == METRONOME_HISTOGRAM_SIZE);
    CHECK(metronome_histogram_align() == METRONOME_HISTOGRAM_ALIGN);

    /* Refused memory: NULL, short, misaligned. */
    CHECK(metronome_histogram_init(NULL, METRONOME_HISTOGRAM_SIZE) == NULL);
    CHECK(metronome_histogram_init(storage, METRONOME_HISTOGRAM_SIZE - 1) == NULL);
    CHECK(metronome_histogram_init(storage + 8, METRONOME_HISTOGRAM_SIZE) == NULL);

    metronome_histogram *h = metronome_histogram_init(storage, sizeof storage);
    CHECK(h == (metronome_histogram *)(void *)storage);
    CHECK(metronome_histogram_count(h) == 0);
    CHECK(metronome_histogram_quantile(h, 0.99) == 0);
    CHECK(metronome_histogram_mean(h) == 0.0);

    /* The core's doc example: 1002 lies in the bucket [1000, 1003]. */
    const uint64_t values[] = {1000, 1002, 1005, 2000};
    for (size_t i = 0; i < 4; i++)
        CHECK(metronome_histogram_record(h, values[i]) == METRONOME_OK);
    CHECK(metronome_histogram_count(h) == 4);
    CHECK(metronome_histogram_min(h) == 1000);
    CHECK(metronome_histogram_max(h) == 2000);
    CHECK(metronome_histogram_mean(h) == 1251.75);
    CHECK(metronome_histogram_quantile(h, 0.5) == 1003);
    CHECK(metronome_histogram_quantile(h, 1.0) == 2000);
    CHECK(metronome_histogram_value_at_percentile(h, 50.0) == 1003);
    CHECK(metronome_histogram_value_at_percentile(h, 75.0) == 1007);
    uint64_t lo = 0, hi = 1;
    CHECK(metronome_histogram_sum(h, &lo, &hi) == METRONOME_OK);
    CHECK(lo == 5007 && hi == 0);

    CHECK(metronome_bucket_index(1002) == 2 * 128 + 250);
    CHECK(metronome_bucket_bounds(metronome_bucket_index(1002), &lo, &hi) == METRONOME_OK);
    CHECK(lo == 1000 && hi == 1003);
    CHECK(metronome_bucket_bounds(METRONOME_BUCKET_COUNT - 1, &lo, &hi) == METRONOME_OK);
    CHECK(lo == (UINT64_C(255) << 56) && hi == UINT64_MAX);
    CHECK(metronome_bucket_bounds(METRONOME_BUCKET_COUNT, &lo, &hi) == METRONOME_ERR_INVALID);

    /* Buckets: [1000,1003] x2, [1004,1007] x1, [2000,2007] x1. */
    size_t cursor = 0;
    metronome_bucket b;
    int n = 0;
    uint64_t seen = 0;
    while (metronome_histogram_next_bucket(h, &cursor, &b) == 1) {
        if (n == 0) CHECK(b.lower == 1000 && b.upper == 1003 && b.count == 2);
        if (n == 1) CHECK(b.lower == 1004 && b.upper == 1007 && b.count == 1);
        if (n == 2) CHECK(b.lower == 2000 && b.upper == 2007 && b.count == 1);
        seen += b.count;
        n++;
    }
    CHECK(n == 3 && seen == 4);
    CHECK(metronome_histogram_next_bucket(h, &cursor, &b) == 0);

    /* Uncompressed V2: a size query, then the bytes. */
    size_t len = 0;
    CHECK(metronome_histogram_encode_v2(h, NULL, 0, &len) == METRONOME_ERR_BUFFER_TOO_SMALL);
    CHECK(len == metronome_histogram_encoded_len(h));
    unsigned char small[64];
    CHECK(metronome_histogram_encode_v2(h, small, 10, &len) == METRONOME_ERR_BUFFER_TOO_SMALL);
    CHECK(metronome_histogram_encode_v2(h, small, sizeof small, &len) == METRONOME_OK);
    CHECK(len == metronome_histogram_encoded_len(h));
    CHECK(small[0] == 0x1c && small[1] == 0x84 && small[2] == 0x93 && small[3] == 0x13);

    /* Record_n, values above INT64_MAX, reset, merge. */
    metronome_histogram *g = metronome_histogram_new();
    CHECK(g != NULL);
    CHECK(metronome_histogram_record_n(g, 300, 3) == METRONOME_OK);
    CHECK(metronome_histogram_record_n(g, 7, 0) == METRONOME_OK);
    CHECK(metronome_histogram_count(g) == 3 && metronome_histogram_min(g) == 300);
    CHECK(metronome_histogram_record(g, UINT64_MAX) == METRONOME_OK);
    CHECK(metronome_histogram_sum(g, &lo, &hi) == METRONOME_OK);
    CHECK(lo == 899 && hi == 1); /* 900 + 2^64 - 1 */
    CHECK(metronome_histogram_merge(g, g) == METRONOME_ERR_ALIAS);
    CHECK(metronome_histogram_merge(g, h) == METRONOME_OK);
    CHECK(metronome_histogram_count(g) == 8);
    CHECK(metronome_histogram_min(g) == 300 && metronome_histogram_max(g) == UINT64_MAX);
    CHECK(metronome_histogram_count(h) == 4);
    CHECK(metronome_histogram_reset(g) == METRONOME_OK);
    CHECK(metronome_histogram_count(g) == 0 && metronome_histogram_max(g) == 0);

    /* Decode: plain into g, then refusals leave g unchanged. */
    CHECK(metronome_histogram_decode_v2(g, small, len) == METRONOME_OK);
    CHECK(metronome_histogram_count(g) == 4);
    CHECK(metronome_histogram_quantile(g, 0.5) == 1003);
    CHECK(metronome_histogram_decode_v2(g, small, 10) == METRONOME_ERR_TRUNCATED);
    CHECK(metronome_histogram_decode_v2(g, (const uint8_t *)"GIF89a", 6) == METRONOME_ERR_COOKIE);
    CHECK(metronome_histogram_decode_v2(g, NULL, 5) == METRONOME_ERR_NULL);
    unsigned char bad[16] = {0x1c, 0x84, 0x93, 0x14, 0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8};
    CHECK(metronome_histogram_decode_v2(g, bad, sizeof bad) == METRONOME_ERR_ZLIB);
    CHECK(metronome_histogram_count(g) == 4);

    /* NULL everywhere: an error code or 0, never a crash. */
    CHECK(metronome_histogram_record(NULL, 1) == METRONOME_ERR_NULL);
    CHECK(metronome_histogram_record_n(NULL, 1, 1) == METRONOME_ERR_NULL);
    CHECK(metronome_histogram_reset(NULL) == METRONOME_ERR_NULL);
    CHECK(metronome_histogram_merge(NULL, h) == METRONOME_ERR_NULL);
    CHECK(metronome_histogram_merge(h, NULL) == METRONOME_ERR_NULL);
    CHECK(metronome_histogram_count(NULL) == 0);
    CHECK(metronome_histogram_min(NULL) == 0);
    CHECK(metronome_histogram_max(NULL) == 0);
    CHECK(metronome_histogram_mean(NULL) == 0.0);
    CHECK(metronome_histogram_quantile(NULL, 0.5) == 0);
    CHECK(metronome_histogram_sum(h, NULL, &hi) == METRONOME_ERR_NULL);
    CHECK(metronome_histogram_next_bucket(h, NULL, &b) == METRONOME_ERR_NULL);
    CHECK(metronome_histogram_encode_v2(h, small, sizeof small, NULL) == METRONOME_ERR_NULL);
    CHECK(metronome_histogram_encode_v2(NULL, small, sizeof small, &len) == METRONOME_ERR_NULL);
    CHECK(metronome_histogram_encode_v2(h, NULL, 5, &len) == METRONOME_ERR_NULL);
    CHECK(metronome_histogram_encode_v2_compressed(NULL, small, sizeof small, &len) == METRONOME_ERR_NULL);
    CHECK(metronome_histogram_decode_v2(NULL, small, 4) == METRONOME_ERR_NULL);
    CHECK(metronome_bucket_bounds(0, NULL, &hi) == METRONOME_ERR_NULL);
    metronome_histogram_free(NULL);

    CHECK(strcmp(metronome_strerror(METRONOME_OK), "success") == 0);
    CHECK(strcmp(metronome_strerror(12345), "unknown status code") == 0);
    CHECK(strstr(metronome_strerror(METRONOME_ERR_ALIAS), "itself") != NULL);

    metronome_histogram_free(g);
}

static int write_file(const char *dir, const char *name, const unsigned char *buf, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(buf, 1, len, f);
    return fclose(f) == 0 && w == len ? 0 : -1;
}

static void print_histogram(const char *name, const metronome_histogram *h) {
    uint64_t lo = 0, hi = 0;
    CHECK(metronome_histogram_sum(h, &lo, &hi) == METRONOME_OK);
    printf("%s count=%" PRIu64 " min=%" PRIu64 " max=%" PRIu64 " mean=%.17g sum=%" PRIu64 ",%" PRIu64 "\n",
           name, metronome_histogram_count(h), metronome_histogram_min(h), metronome_histogram_max(h),
           metronome_histogram_mean(h), hi, lo);
    for (size_t i = 0; i < NQ; i++)
        printf("%s q%.4f=%" PRIu64 "\n", name, QUANTILES[i], metronome_histogram_quantile(h, QUANTILES[i]));
    printf("%s p99.9=%" PRIu64 "\n", name, metronome_histogram_value_at_percentile(h, 99.9));
    size_t cursor = 0;
    metronome_bucket b;
    while (metronome_histogram_next_bucket(h, &cursor, &b) == 1)
        printf("%s bucket %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", name, b.lower, b.upper, b.count);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s VALUES OUTDIR\n", argv[0]);
        return 2;
    }
    hand_checks();

    FILE *in = fopen(argv[1], "r");
    if (!in) {
        perror(argv[1]);
        return 2;
    }
    metronome_histogram *a = metronome_histogram_new();
    metronome_histogram *b = metronome_histogram_init(storage, sizeof storage); /* re-init: empty */
    CHECK(a != NULL && b != NULL && metronome_histogram_count(b) == 0);
    uint64_t value, count;
    unsigned long line = 0;
    while (fscanf(in, "%" SCNu64 " %" SCNu64, &value, &count) == 2) {
        metronome_histogram *dst = line++ % 2 ? b : a;
        if (count == 1)
            CHECK(metronome_histogram_record(dst, value) == METRONOME_OK);
        else
            CHECK(metronome_histogram_record_n(dst, value, count) == METRONOME_OK);
    }
    fclose(in);
    CHECK(metronome_histogram_merge(a, b) == METRONOME_OK);
    print_histogram("merged", a);

    /* Plain V2 into a buffer of the exact size, compressed V2 after a size query. */
    size_t plain_len = metronome_histogram_encoded_len(a), len = 0;
    unsigned char *plain = malloc(plain_len);
    CHECK(plain != NULL);
    CHECK(metronome_histogram_encode_v2(a, plain, plain_len, &len) == METRONOME_OK);
    CHECK(len == plain_len);
    size_t packed_len = 0;
    CHECK(metronome_histogram_encode_v2_compressed(a, NULL, 0, &packed_len) == METRONOME_ERR_BUFFER_TOO_SMALL);
    unsigned char *packed = malloc(packed_len);
    CHECK(packed != NULL);
    CHECK(metronome_histogram_encode_v2_compressed(a, packed, packed_len, &len) == METRONOME_OK);
    CHECK(len == packed_len);
    CHECK(packed[3] == 0x14);
    CHECK(write_file(argv[2], "plain.v2", plain, plain_len) == 0);
    CHECK(write_file(argv[2], "compressed.v2", packed, packed_len) == 0);

    /* Both decode to the same counts. */
    metronome_histogram *d = metronome_histogram_new();
    CHECK(metronome_histogram_decode_v2(d, packed, packed_len) == METRONOME_OK);
    print_histogram("decoded", d);
    metronome_histogram *e = metronome_histogram_new();
    CHECK(metronome_histogram_decode_v2(e, plain, plain_len) == METRONOME_OK);
    size_t c1 = 0, c2 = 0;
    metronome_bucket x, y;
    int r1, r2;
    do {
        r1 = metronome_histogram_next_bucket(a, &c1, &x);
        r2 = metronome_histogram_next_bucket(e, &c2, &y);
        CHECK(r1 == r2);
        if (r1 == 1 && r2 == 1) CHECK(memcmp(&x, &y, sizeof x) == 0);
    } while (r1 == 1 && r2 == 1);

    free(plain);
    free(packed);
    metronome_histogram_free(a);
    metronome_histogram_free(d);
    metronome_histogram_free(e);
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    return 0;
}
