// goserver: a TCP request/response server whose Ps are busy a chosen share
// of the time, for loopstat's scheduler tests. Its own clients (goroutines,
// over 127.0.0.1) ask every period for a request that burns CPU on the
// server side; -busy sets the share of GOMAXPROCS Ps that work takes.
// Prints "port N" once listening, then "cpu_ns N wall_ns N" each second
// (its own rusage), so a test can compare against its own CPU time.
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"
	"time"
)

var sink uint64

// spin burns about d of CPU: a calibrated loop, so that a descheduled
// goroutine does not count wall time as work.
func spin(iters uint64) {
	x := sink
	for i := uint64(0); i < iters; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

func calibrate() float64 {
	const n = 20000000
	best := time.Hour
	for r := 0; r < 3; r++ {
		t0 := time.Now()
		spin(n)
		if d := time.Since(t0); d < best {
			best = d
		}
	}
	return float64(n) / float64(best.Nanoseconds()) // iterations per ns
}

func serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	var b [8]byte
	for {
		if _, err := r.Read(b[:]); err != nil {
			return
		}
		spin(binary.LittleEndian.Uint64(b[:]))
		if _, err := c.Write(b[:1]); err != nil {
			return
		}
	}
}

func client(addr string, period time.Duration, iters uint64) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		os.Exit(1)
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], iters)
	next := time.Now()
	for {
		if _, err := c.Write(b[:]); err != nil {
			return
		}
		if _, err := c.Read(b[:1]); err != nil {
			return
		}
		binary.LittleEndian.PutUint64(b[:], iters)
		next = next.Add(period)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		} else {
			next = time.Now()
		}
	}
}

func cpuNs() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func main() {
	busy := flag.Float64("busy", 0.3, "share of GOMAXPROCS Ps busy with requests (0: idle server)")
	conns := flag.Int("conns", 4, "client connections")
	periodMs := flag.Int("period-ms", 10, "each client's request period")
	flag.Parse()
	ipn := calibrate()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(1)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	fmt.Printf("port %d\n", ln.Addr().(*net.TCPAddr).Port)
	if *busy > 0 {
		period := time.Duration(*periodMs) * time.Millisecond
		work := *busy * float64(runtime.GOMAXPROCS(0)) * float64(period.Nanoseconds()) / float64(*conns)
		for i := 0; i < *conns; i++ {
			go client(ln.Addr().String(), period, uint64(work*ipn))
		}
	}
	t0, c0 := time.Now(), cpuNs()
	for {
		time.Sleep(time.Second)
		fmt.Printf("cpu_ns %d wall_ns %d\n", cpuNs()-c0, time.Since(t0).Nanoseconds())
	}
}
