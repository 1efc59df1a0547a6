// Command flood repeats one unauthenticated request as fast as it can for a
// while, from one address, and counts the answers by status: the audit's
// "abuse without credentials" cases (issue 15), measured.
//
//	flood -url http://127.0.0.1:8080 -mode register -d 10s -c 8
//	flood -url … -mode authorize -client CLIENT_ID -redirect https://app.example/cb -d 10s
package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "server base URL")
	mode := flag.String("mode", "register", "register: POST /api/v1/oauth/register; authorize: GET /oauth/authorize")
	client := flag.String("client", "", "client_id for -mode authorize")
	redirect := flag.String("redirect", "https://app.example.test/callback", "redirect URI to register or authorize with")
	dur := flag.Duration("d", 10*time.Second, "how long to flood")
	conc := flag.Int("c", 8, "concurrent connections")
	flag.Parse()

	tr := &http.Transport{MaxIdleConnsPerHost: *conc}
	hc := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	newReq := func() (*http.Request, error) {
		switch *mode {
		case "register":
			body := fmt.Sprintf(`{"client_name":"flood","redirect_uris":[%q]}`, *redirect)
			r, err := http.NewRequest(http.MethodPost, *base+"/api/v1/oauth/register", bytes.NewBufferString(body))
			if err == nil {
				r.Header.Set("Content-Type", "application/json")
			}
			return r, err
		case "authorize":
			var v [32]byte
			rand.Read(v[:])
			sum := sha256.Sum256([]byte(base64.RawURLEncoding.EncodeToString(v[:])))
			q := url.Values{"response_type": {"code"}, "client_id": {*client}, "redirect_uri": {*redirect},
				"scope": {"sms:read"}, "state": {"flood"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])},
				"code_challenge_method": {"S256"}}
			return http.NewRequest(http.MethodGet, *base+"/oauth/authorize?"+q.Encode(), nil)
		}
		return nil, fmt.Errorf("unknown -mode %q", *mode)
	}
	if _, err := newReq(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	var mu sync.Mutex
	counts := map[string]int{}
	deadline := time.Now().Add(*dur)
	var wg sync.WaitGroup
	for range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				r, _ := newReq()
				resp, err := hc.Do(r)
				key := "transport error"
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					key = fmt.Sprint(resp.StatusCode)
				}
				mu.Lock()
				counts[key]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var keys []string
	total := 0
	for k, n := range counts {
		keys = append(keys, fmt.Sprintf("%s=%d", k, n))
		total += n
	}
	sort.Strings(keys)
	fmt.Printf("%s for %v, %d connections: %d requests (%s)\n", *mode, *dur, *conc, total, strings.Join(keys, " "))
}
