// tokioserver: a tokio multi-thread server (2 workers) whose workers are busy
// a chosen share of the time, for loopstat's scheduler tests. Its clients
// are plain threads (not workers) over 127.0.0.1; a spawn_blocking task
// sleeps in the blocking pool all along, which is not worker capacity.
// Prints "port N" and "blocking TID" (the sleeper's thread), then each second
// "busy_ns N wall_ns N": tokio's own worker_total_busy_duration summed
// over the workers (--cfg tokio_unstable).
use std::io::{Read, Write};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

static mut SINK: u64 = 0;

fn spin(iters: u64) {
    let mut x = unsafe { SINK };
    for _ in 0..iters {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        x = unsafe { std::ptr::read_volatile(&x) };
    }
    unsafe { SINK = x };
}

fn calibrate() -> f64 {
    let n = 20_000_000u64;
    let mut best = Duration::from_secs(3600);
    for _ in 0..3 {
        let t0 = Instant::now();
        spin(n);
        best = best.min(t0.elapsed());
    }
    n as f64 / best.as_nanos() as f64
}

fn gettid() -> i64 {
    unsafe { libc_gettid() }
}

extern "C" {
    #[link_name = "gettid"]
    fn libc_gettid() -> i64;
}

async fn serve(mut s: tokio::net::TcpStream) {
    let mut b = [0u8; 8];
    loop {
        if s.read_exact(&mut b).await.is_err() {
            return;
        }
        spin(u64::from_le_bytes(b));
        if s.write_all(&b[..1]).await.is_err() {
            return;
        }
    }
}

fn client(port: u16, period: Duration, iters: u64) {
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    c.set_nodelay(true).ok();
    let mut next = Instant::now();
    let mut b = [0u8; 8];
    loop {
        if c.write_all(&iters.to_le_bytes()).is_err() || c.read_exact(&mut b[..1]).is_err() {
            return;
        }
        next += period;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
}

fn main() {
    let mut busy = 0.3f64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "-busy" {
            busy = args.next().and_then(|v| v.parse().ok()).unwrap_or(busy);
        }
    }
    let ipn = calibrate();
    let workers = 2usize;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .on_thread_start(|| {})
        .build()
        .expect("runtime");
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("bind");
    let port = listener.local_addr().unwrap().port();
    println!("port {}", port);
    rt.spawn(async move {
        loop {
            if let Ok((s, _)) = listener.accept().await {
                s.set_nodelay(true).ok();
                tokio::spawn(serve(s));
            }
        }
    });
    rt.spawn(async {
        tokio::task::spawn_blocking(|| {
            println!("blocking {}", gettid());
            loop {
                std::thread::sleep(Duration::from_millis(50));
            }
        })
        .await
        .ok();
    });
    if busy > 0.0 {
        let conns = 4u32;
        let period = Duration::from_millis(10);
        let work = busy * workers as f64 * period.as_nanos() as f64 / conns as f64;
        for _ in 0..conns {
            let iters = (work * ipn) as u64;
            std::thread::spawn(move || client(port, period, iters));
        }
    }
    let m = rt.metrics();
    let busy_ns = |m: &tokio::runtime::RuntimeMetrics| -> u128 {
        (0..m.num_workers()).map(|w| m.worker_total_busy_duration(w).as_nanos()).sum()
    };
    let (t0, b0) = (Instant::now(), busy_ns(&m));
    loop {
        std::thread::sleep(Duration::from_secs(1));
        println!("busy_ns {} wall_ns {}", busy_ns(&m) - b0, t0.elapsed().as_nanos());
        std::io::stdout().flush().ok();
    }
}
