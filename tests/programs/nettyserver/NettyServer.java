// NettyServer: a Netty server (one boss loop, 2 NIO worker loops) whose worker
// loops are busy a chosen share of the time, for loopstat's loop-group
// tests. Its clients are plain java.net.Socket threads over 127.0.0.1, one
// connection per worker loop (Netty assigns channels round robin). Prints
// "port N" once listening.
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

public final class NettyServer {
	static volatile long sink;

	static void spin(long iters) {
		long x = sink;
		for (long i = 0; i < iters; i++)
			x = x * 6364136223846793005L + 1442695040888963407L;
		sink = x;
	}

	static double calibrate() {
		long n = 20_000_000L, best = Long.MAX_VALUE;
		for (int r = 0; r < 5; r++) {
			long t0 = System.nanoTime();
			spin(n);
			best = Math.min(best, System.nanoTime() - t0);
		}
		return (double) n / best;
	}

	static final class Handler extends ChannelInboundHandlerAdapter {
		private final ByteBuf acc = io.netty.buffer.Unpooled.buffer(16);

		@Override
		public void channelRead(ChannelHandlerContext ctx, Object msg) {
			ByteBuf in = (ByteBuf) msg;
			acc.writeBytes(in);
			in.release();
			while (acc.readableBytes() >= 8) {
				spin(acc.readLongLE());
				ctx.writeAndFlush(ctx.alloc().buffer(1).writeByte(1));
			}
			acc.discardReadBytes();
		}
	}

	static void client(int port, long periodNs, long iters) {
		try (Socket s = new Socket("127.0.0.1", port)) {
			s.setTcpNoDelay(true);
			OutputStream out = s.getOutputStream();
			InputStream in = s.getInputStream();
			byte[] req = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(iters).array();
			long next = System.nanoTime();
			for (;;) {
				out.write(req);
				if (in.read() < 0)
					return;
				next += periodNs;
				long d = next - System.nanoTime();
				if (d > 0)
					Thread.sleep(d / 1_000_000, (int) (d % 1_000_000));
				else
					next = System.nanoTime();
			}
		} catch (Exception e) {
			System.err.println("client: " + e);
		}
	}

	public static void main(String[] args) throws Exception {
		double busy = 0.3;
		for (int i = 0; i + 1 < args.length; i++)
			if (args[i].equals("-busy"))
				busy = Double.parseDouble(args[i + 1]);
		double ipn = calibrate();
		NioEventLoopGroup boss = new NioEventLoopGroup(1), workers = new NioEventLoopGroup(2);
		ServerBootstrap b = new ServerBootstrap().group(boss, workers).channel(NioServerSocketChannel.class)
			.childOption(ChannelOption.TCP_NODELAY, true)
			.childHandler(new ChannelInitializer<SocketChannel>() {
				@Override
				protected void initChannel(SocketChannel ch) {
					ch.pipeline().addLast(new Handler());
				}
			});
		int port = ((java.net.InetSocketAddress) b.bind("127.0.0.1", 0).sync().channel().localAddress()).getPort();
		System.out.println("port " + port);
		System.out.flush();
		if (busy > 0) {
			long period = 10_000_000L;
			long iters = (long) (busy * period * ipn); /* one connection per loop: busy share each */
			for (int i = 0; i < 2; i++) {
				Thread t = new Thread(() -> client(port, period, iters), "client-" + i);
				t.setDaemon(true);
				t.start();
			}
		}
		Thread.currentThread().join();
	}
}
