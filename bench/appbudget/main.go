// Command appbudget measures the app's budgets (issue 25) in headless
// Chromium against a running server: how long after the app opens, signed
// in, the conversation list is on screen; how long opening a thread takes;
// and how long a text sent through the API takes to appear in the open
// thread. bench/app-budget.sh runs it against the inbox benchmark database.
//
// The times are the page's own clock (performance.now() from the start of
// the navigation) when the condition first holds, polled every animation
// frame, so Chromium's start and the CDP round trips are not counted.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

type options struct {
	base, username, password, key, line, big, chromium string
	runs                                               int
}

func main() {
	var o options
	flag.StringVar(&o.base, "url", "", "the server's base URL, e.g. http://127.0.0.1:8080 (required)")
	flag.StringVar(&o.username, "username", "agent1", "who signs in")
	flag.StringVar(&o.password, "password", "bench-password", "their password")
	flag.StringVar(&o.key, "key", "", "an API key with sms:send and messages:read, for the live text (required)")
	flag.StringVar(&o.line, "line", "", "the big thread's line (required)")
	flag.StringVar(&o.big, "big", "", "the big thread's number (required)")
	flag.StringVar(&o.chromium, "chromium", "/usr/bin/chromium", "the Chromium binary")
	flag.IntVar(&o.runs, "runs", 7, "measurements of each")
	flag.Parse()
	if o.base == "" || o.key == "" || o.line == "" || o.big == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "appbudget:", err)
		os.Exit(1)
	}
}

// listShown holds once ten conversation links are on screen.
const listShown = `[...document.querySelectorAll('a[href]')].filter(a => /^\/app\/inbox\/[^/]+\/[^/]+$/.test(new URL(a.href).pathname)).length >= 10`

func run(o options) error {
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(o.chromium),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 900))
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	// The first action starts the browser: under a step's timeout it would
	// end the browser with the step.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		return fmt.Errorf("start chromium: %w", err)
	}
	step := func(d time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
		c, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return chromedp.Do(c, actions...)
	}

	// Sign in once through the real pages; later loads resume the session.
	if err := step(60*time.Second,
		chromedp.Navigate(o.base+"/app/"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="username"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="username"]`), o.username),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), o.password+"\r"),
	); err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	// The form's answer navigates twice (back to the app, which then loads
	// the list): a poll that a navigation interrupts starts again.
	for deadline := time.Now().Add(60 * time.Second); ; {
		err := step(10*time.Second, chromedp.Poll[chromedp.Void](listShown))
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the first list after signing in: %w", err)
		}
		fmt.Fprintln(os.Stderr, "appbudget: waiting for the list:", err)
		time.Sleep(200 * time.Millisecond)
	}

	measure := func(what, to, cond string) ([]float64, error) {
		var ms []float64
		for range o.runs {
			if err := step(30*time.Second, chromedp.Navigate(to)); err != nil {
				return nil, fmt.Errorf("%s: open: %w", what, err)
			}
			c, cancel := context.WithTimeout(ctx, 30*time.Second)
			v, err := chromedp.Run(c, chromedp.Poll[float64](`(`+cond+`) ? performance.now() : 0`))
			cancel()
			if err != nil {
				c, cancel := context.WithTimeout(ctx, 5*time.Second)
				page, _ := chromedp.Run(c, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 600)`))
				cancel()
				return nil, fmt.Errorf("%s: wait: %w; the page:\n%s", what, err, page)
			}
			ms = append(ms, v)
		}
		return ms, nil
	}
	report := func(what string, ms []float64) {
		s := slices.Clone(ms)
		slices.Sort(s)
		fmt.Printf("%-44s median %6.0f ms   max %6.0f ms   (%d runs: %s)\n", what, s[len(s)/2], s[len(s)-1], len(s), fmtAll(ms))
	}

	list, err := measure("list", o.base+"/app/", listShown)
	if err != nil {
		return err
	}
	report("conversation list on screen after opening", list)

	newest, err := newestText(o)
	if err != nil {
		return err
	}
	threadURL := o.base + "/app/inbox/" + o.line + "/" + o.big
	thread, err := measure("thread", threadURL, fmt.Sprintf(`document.body.innerText.includes(%q)`, newest))
	if err != nil {
		return err
	}
	report("big thread's newest message on screen", thread)

	// A text sent through the API, into the open list. (The generated
	// numbers are not dialable — 212-000-xxxx — so the texts go to new
	// conversations, which the list shows at its top.)
	if err := step(30*time.Second, chromedp.Navigate(o.base+"/app/inbox"), chromedp.Poll[chromedp.Void](listShown)); err != nil {
		return fmt.Errorf("open the list for the live texts: %w", err)
	}
	var live []float64
	for i := range o.runs {
		text := fmt.Sprintf("Live check %d at %d", i, time.Now().UnixNano())
		began := time.Now()
		if err := send(o, fmt.Sprintf("+1 212 555 01%02d", i%100), text); err != nil {
			return err
		}
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := chromedp.Run(c, chromedp.Poll[bool](fmt.Sprintf(`document.body.innerText.includes(%q)`, text)))
		cancel()
		if err != nil {
			return fmt.Errorf("live text %d: %w", i, err)
		}
		live = append(live, float64(time.Since(began).Microseconds())/1000)
	}
	report("text sent through the API, in the open list", live)
	return nil
}

func fmtAll(ms []float64) string {
	var b strings.Builder
	for i, v := range ms {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%.0f", v)
	}
	return b.String()
}

func api(o options, method, path string, body any, out any) error {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, o.base+"/api/public/v1"+path, rd)
	req.Header.Set("Authorization", "Bearer "+o.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// newestText is the text of the big thread's newest message.
func newestText(o options) (string, error) {
	var r struct {
		Data struct {
			Messages []struct {
				Text string `json:"text"`
			} `json:"messages"`
		} `json:"data"`
	}
	if err := api(o, http.MethodGet, "/sms/conversations/"+url.PathEscape(o.line)+"/"+url.PathEscape(o.big)+"?limit=1", nil, &r); err != nil {
		return "", err
	}
	if len(r.Data.Messages) == 0 || r.Data.Messages[0].Text == "" {
		return "", fmt.Errorf("the big thread's newest message has no text")
	}
	return r.Data.Messages[0].Text, nil
}

func send(o options, to, text string) error {
	var r struct {
		Data struct {
			Messages []json.RawMessage `json:"messages"`
			Skipped  []json.RawMessage `json:"skipped"`
		} `json:"data"`
	}
	if err := api(o, http.MethodPost, "/sms/messages", map[string]any{"from": o.line, "to": []string{to}, "message": text}, &r); err != nil {
		return err
	}
	if len(r.Data.Messages) != 1 {
		return fmt.Errorf("the live text to %s was not sent: skipped %s", to, r.Data.Skipped)
	}
	return nil
}
