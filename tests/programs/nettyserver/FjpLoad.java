// FjpLoad: a ForkJoinPool of 2 workers busy a chosen share of the time, for
// loopstat's scheduler tests: every 10 ms a plain thread submits 2 tasks
// that each burn busy x 10 ms of CPU (a calibrated loop). Prints "ready"
// once its pool runs.
import java.util.concurrent.ForkJoinPool;

public final class FjpLoad {
	static volatile long sink;

	static void spin(long iters) {
		long x = sink;
		for (long i = 0; i < iters; i++)
			x = x * 6364136223846793005L + 1442695040888963407L;
		sink = x;
	}

	public static void main(String[] args) throws Exception {
		double busy = 0.3;
		for (int i = 0; i + 1 < args.length; i++)
			if (args[i].equals("-busy"))
				busy = Double.parseDouble(args[i + 1]);
		long n = 20_000_000L, best = Long.MAX_VALUE;
		for (int r = 0; r < 5; r++) {
			long t0 = System.nanoTime();
			spin(n);
			best = Math.min(best, System.nanoTime() - t0);
		}
		final long iters = (long) (busy * 10_000_000L * n / best);
		ForkJoinPool pool = new ForkJoinPool(2);
		pool.submit(() -> spin(1)).get();
		pool.submit(() -> spin(1)).get();
		System.out.println("ready");
		System.out.flush();
		long next = System.nanoTime();
		for (;;) {
			pool.execute(() -> spin(iters));
			pool.execute(() -> spin(iters));
			next += 10_000_000L;
			long d = next - System.nanoTime();
			if (d > 0)
				Thread.sleep(d / 1_000_000, (int) (d % 1_000_000));
			else
				next = System.nanoTime();
		}
	}
}
