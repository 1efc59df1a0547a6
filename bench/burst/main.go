// Command burst sends N maximal sends at once (ten 5 MB attachments each,
// about 70 MB of JSON) to one server and reports their statuses and times.
// bench/memory.sh runs it to measure the server's memory before, during and
// after such a burst. Every request posts the same body bytes, so the client
// itself holds one copy.
package main

import (
	"bytes"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "server base URL")
	key := flag.String("key", "", "API key with sms:send")
	from := flag.String("from", "14155550100", "sending line")
	n := flag.Int("n", 200, "concurrent sends")
	flag.Parse()

	// A PNG signature followed by zeros: the server checks the signature.
	img := make([]byte, 5<<20)
	copy(img, "\x89PNG\r\n\x1a\n")
	content := base64.StdEncoding.EncodeToString(img)
	var b strings.Builder
	fmt.Fprintf(&b, `{"from":%q,"to":["12125550100"],"attachments":[`, *from)
	for i := range 10 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"filename":"p%d.png","contentType":"image/png","content":%q}`, i, content)
	}
	b.WriteString("]}")
	body := []byte(b.String())

	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: *n}}
	var mu sync.Mutex
	statuses := map[string]int{}
	var times []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for range *n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			req, _ := http.NewRequest("POST", *url+"/api/public/v1/sms/messages", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+*key)
			req.Header.Set("Content-Type", "application/json")
			status := "error"
			if resp, err := client.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				status = fmt.Sprint(resp.StatusCode)
			}
			mu.Lock()
			statuses[status]++
			times = append(times, time.Since(t0))
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	fmt.Printf("burst: %d sends of %d MB in %.1fs; statuses %v; time p50 %.1fs max %.1fs\n",
		*n, len(body)>>20, time.Since(start).Seconds(), statuses, times[len(times)/2].Seconds(), times[len(times)-1].Seconds())
	if statuses["error"] == *n {
		os.Exit(1)
	}
}
