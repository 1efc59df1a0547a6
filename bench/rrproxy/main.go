// Command rrproxy is the round-robin TCP proxy of the e2e tests
// (internal/tcpproxy) as a process, for benchmarks: it listens on -listen,
// prints its address, and hands each connection to the next target given as
// an argument until it is stopped.
//
//	rrproxy -listen 127.0.0.1:0 127.0.0.1:8081 127.0.0.1:8082 127.0.0.1:8083
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"switchboard/internal/tcpproxy"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	p, err := tcpproxy.Listen(*listen, flag.Args()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rrproxy:", err)
		os.Exit(2)
	}
	fmt.Println(p.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	p.Close()
}
