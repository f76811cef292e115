//! The closed floor: one request in flight per connection, no pacing.

use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use io_uring::{opcode, squeue, types};

use crate::args::Options;
use crate::conn::{build_ring, connect_all, parse_response, rusage, Conn, Parsed, TAG_SEND};
use crate::output::Outcome;

/// The closed loop.
pub(crate) fn run_closed(options: &Options) -> Result<Outcome, String> {
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: floor\r\n\r\n",
        options.path, options.host
    )
    .into_bytes();
    let request_len = u32::try_from(request.len()).map_err(|_| "request too long")?;

    // Buffers first, ring second: locals drop in reverse order, so the
    // ring (and with it every operation still in the kernel) goes before
    // the memory those operations point at.
    let mut conns = connect_all(options)?;

    let sq_entries = u32::try_from(options.connections * 2)
        .map_err(|_| "too many connections")?
        .next_power_of_two();
    let mut ring = build_ring(sq_entries).map_err(|e| format!("io_uring setup: {e}"))?;
    // Sends whose success nobody needs to hear about post no completion.
    let send_flags = if ring.params().is_feature_skip_cqe_on_success() {
        squeue::Flags::SKIP_SUCCESS
    } else {
        squeue::Flags::empty()
    };
    let (submitter, mut sq, mut cq) = ring.split();

    let recv_entry = |conn: &mut Conn, index: usize| {
        let free = &mut conn.buf[conn.filled..];
        opcode::Recv::new(
            types::Fd(conn.stream.as_raw_fd()),
            free.as_mut_ptr(),
            // At most RECV_BUF, which fits in u32.
            free.len() as u32,
        )
        .build()
        .user_data(index as u64)
    };
    let send_entry = |conn: &Conn, index: usize| {
        opcode::Send::new(
            types::Fd(conn.stream.as_raw_fd()),
            request.as_ptr(),
            request_len,
        )
        // All or an error: a short send never passes as a success.
        .flags(libc::MSG_WAITALL)
        .build()
        .flags(send_flags)
        .user_data(TAG_SEND | index as u64)
    };

    // Recvs in the kernel: each must complete before its buffer may go.
    let mut recvs_in_flight = 0usize;
    for (index, conn) in conns.iter_mut().enumerate() {
        let entries = [send_entry(conn, index), recv_entry(conn, index)];
        // SAFETY: the request bytes and this connection's receive buffer
        // are owned by locals declared before `ring`, so they outlive
        // every operation in it; the buffer is not touched again until
        // this recv completes. The SQ has 2 entries per connection.
        unsafe { sq.push_multiple(&entries) }.map_err(|_| "submission queue full")?;
        recvs_in_flight += 1;
    }
    sq.sync();

    let start_usage = rusage();
    let start = Instant::now();
    let deadline = start + options.duration;
    let mut requests = 0u64;
    let mut failure: Option<String> = None;
    let end = loop {
        submitter
            .submit_and_wait(1)
            .map_err(|e| format!("io_uring enter: {e}"))?;
        let now = Instant::now();
        let running = now < deadline;
        // Learn how far the kernel consumed the SQ, and what completed.
        sq.sync();
        cq.sync();
        for cqe in &mut cq {
            let (user_data, result) = (cqe.user_data(), cqe.result());
            let index = (user_data & 0xffff_ffff) as usize;
            if user_data & TAG_SEND != 0 {
                // Only failed sends report (all of them without SKIP_SUCCESS).
                if result < 0 {
                    failure.get_or_insert_with(|| {
                        format!("send: {}", io::Error::from_raw_os_error(-result))
                    });
                } else if result as u32 != request_len {
                    failure.get_or_insert_with(|| format!("short send of {result} bytes"));
                }
                continue;
            }
            recvs_in_flight -= 1;
            if result <= 0 {
                failure.get_or_insert_with(|| {
                    if result == 0 {
                        "the server closed a connection".to_string()
                    } else {
                        format!("recv: {}", io::Error::from_raw_os_error(-result))
                    }
                });
                continue;
            }
            let conn = &mut conns[index];
            conn.filled += result as usize;
            let complete = match parse_response(&conn.buf[..conn.filled]) {
                Ok(Parsed::Complete(len)) => {
                    conn.buf.copy_within(len..conn.filled, 0);
                    conn.filled -= len;
                    true
                }
                Ok(Parsed::Partial) => false,
                Err(message) => {
                    failure.get_or_insert(message);
                    continue;
                }
            };
            if complete {
                if !running {
                    continue;
                }
                requests += 1;
            }
            let recv = recv_entry(conn, index);
            // SAFETY: as above, the buffers outlive the ring; this
            // connection has no recv in flight (its completion is the one
            // being handled), so the kernel gets the only live pointer to
            // the free tail of its buffer. The SQ holds 2 entries per
            // connection and a connection queues at most 2 per loop.
            unsafe {
                if complete {
                    sq.push_multiple(&[send_entry(conn, index), recv])
                } else {
                    sq.push(&recv)
                }
            }
            .map_err(|_| "submission queue full")?;
            recvs_in_flight += 1;
        }
        sq.sync();
        if !running || failure.is_some() {
            break now;
        }
    };
    let end_usage = rusage();

    // Drain: shut every socket so its pending recv completes, then reap
    // until no recv points into a buffer.
    for conn in &conns {
        let _ = conn.stream.shutdown(std::net::Shutdown::Both);
    }
    let drain_deadline = Instant::now() + Duration::from_secs(5);
    while recvs_in_flight > 0 && Instant::now() < drain_deadline {
        if submitter.submit_and_wait(1).is_err() {
            break;
        }
        cq.sync();
        for cqe in &mut cq {
            if cqe.user_data() & TAG_SEND == 0 {
                recvs_in_flight -= 1;
            }
        }
    }
    if recvs_in_flight > 0 {
        // The kernel may still hold pointers into the buffers: never free them.
        std::mem::forget(conns);
    }

    if let Some(message) = failure {
        return Err(message);
    }
    Ok(Outcome {
        requests,
        seconds: end.duration_since(start).as_secs_f64(),
        cpu_user_s: end_usage.0 - start_usage.0,
        cpu_sys_s: end_usage.1 - start_usage.1,
    })
}
