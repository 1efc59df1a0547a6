// Command pgcount is a TCP proxy in front of PostgreSQL that counts the
// round trips its clients make: every simple Query ('Q') and every Sync ('S')
// of the extended protocol is one wait for the server (a pipelined batch of
// statements ends in a single Sync, so it counts once). It also counts
// COMMITs (simple or prepared) and the statements sent (Query + Execute).
//
//	pgcount -listen 127.0.0.1:0 -upstream 127.0.0.1:5432 -addr-file F -ctl-file C
//
// It writes its listening address to F and the address of its control
// listener to C, where GET / answers the counters as one JSON object and
// GET /queries the executions of each statement text.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
)

var roundTrips, statements, commits atomic.Int64

// perQuery counts executions by statement text (GET /queries).
var perQuery sync.Map // string → *atomic.Int64

func countQuery(q string) {
	v, ok := perQuery.Load(q)
	if !ok {
		v, _ = perQuery.LoadOrStore(q, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to accept PostgreSQL clients on")
	upstream := flag.String("upstream", "127.0.0.1:5432", "the PostgreSQL server")
	addrFile := flag.String("addr-file", "", "write the proxy's address here")
	ctlFile := flag.String("ctl-file", "", "write the control listener's address here")
	flag.Parse()

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ctl, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/queries" {
			m := map[string]int64{}
			perQuery.Range(func(k, v any) bool {
				m[k.(string)] = v.(*atomic.Int64).Load()
				return true
			})
			json.NewEncoder(w).Encode(m)
			return
		}
		json.NewEncoder(w).Encode(map[string]int64{
			"round_trips": roundTrips.Load(), "statements": statements.Load(), "commits": commits.Load(),
		})
	}))
	for f, a := range map[string]string{*addrFile: ln.Addr().String(), *ctlFile: ctl.Addr().String()} {
		if f != "" {
			if err := os.WriteFile(f, []byte(a), 0o644); err != nil {
				log.Fatal(err)
			}
		}
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go proxy(c, *upstream)
	}
}

func proxy(client net.Conn, upstream string) {
	defer client.Close()
	server, err := net.Dial("tcp", upstream)
	if err != nil {
		log.Print(err)
		return
	}
	defer server.Close()
	go func() {
		io.Copy(client, server)
		client.Close()
	}()
	count(bufio.NewReader(client), server)
}

// count forwards the client's messages to server, counting them.
func count(r *bufio.Reader, w io.Writer) {
	// Untyped messages first: SSL/GSS encryption requests (answered by the
	// server with one byte, then the client goes on) and the startup packet.
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[:4]))
		body := make([]byte, n-8)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		if _, err := w.Write(append(hdr[:], body...)); err != nil {
			return
		}
		if code := binary.BigEndian.Uint32(hdr[4:]); code != 80877103 && code != 80877104 {
			break
		}
	}
	named := map[string]string{} // prepared statements' text
	var bound string             // the statement of the last Bind
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		body := make([]byte, int(binary.BigEndian.Uint32(hdr[1:]))-4)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		switch hdr[0] {
		case 'Q':
			roundTrips.Add(1)
			statements.Add(1)
			countQuery(cstring(body))
			if isCommit(cstring(body)) {
				commits.Add(1)
			}
		case 'S':
			roundTrips.Add(1)
		case 'P': // Parse: name, query
			name := cstring(body)
			named[name] = cstring(body[len(name)+1:])
		case 'B': // Bind: portal, statement
			portal := cstring(body)
			bound = named[cstring(body[len(portal)+1:])]
			if isCommit(bound) {
				commits.Add(1)
			}
		case 'E':
			statements.Add(1)
			countQuery(bound)
		}
		if _, err := w.Write(append(hdr[:], body...)); err != nil {
			return
		}
	}
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

func isCommit(q string) bool {
	q = string(bytes.ToLower(bytes.TrimSpace([]byte(q))))
	return q == "commit" || q == "end" || q == "commit;"
}
