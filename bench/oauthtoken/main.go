// Command oauthtoken gets OAuth tokens from a running Switchboard the way a
// browser and a public client would, without a browser: it registers a client
// (its redirect host must be allowed: switchboard oauth allow-host HOST), opens
// the authorize page, posts the sign-in form with the page's CSRF cookie and
// fields, approves on the consent page, takes the code from the redirect and
// exchanges it (PKCE S256) at the token endpoint. It prints the tokens as
// one JSON object.
//
//	go run ./bench/oauthtoken -url http://127.0.0.1:8080 -username amy -password secret
//
// With -refresh-bench it instead obtains -c grants through that flow and has
// -c goroutines rotate their own grant's refresh token for -d, printing
// grants/s and latency percentiles (loadgen cannot do this: it sends the same
// body every time, and a refresh token is single-use).
//
//	go run ./bench/oauthtoken -url … -username … -password … -refresh-bench -c 64 -d 10s
package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

type options struct {
	base, username, password, scope, redirect, clientID string

	refreshBench bool
	conc         int
	dur, warmup  time.Duration
	setupConc    int
	json         bool
}

func main() {
	var o options
	flag.StringVar(&o.base, "url", "", "server base URL, e.g. http://127.0.0.1:8080 (required)")
	flag.StringVar(&o.username, "username", "", "user to sign in as (required)")
	flag.StringVar(&o.password, "password", "", "the user's password (required)")
	flag.StringVar(&o.scope, "scope", "sms:read", "space-separated scopes to ask for")
	flag.StringVar(&o.redirect, "redirect", "https://app.example.test/callback", "redirect URI to register (its host must be allowed)")
	flag.StringVar(&o.clientID, "client-id", "", "use this registered client instead of registering one")
	flag.BoolVar(&o.refreshBench, "refresh-bench", false, "measure refresh-token grants instead of printing tokens")
	flag.IntVar(&o.conc, "c", 64, "refresh bench: concurrent clients, each with its own grant")
	flag.DurationVar(&o.dur, "d", 10*time.Second, "refresh bench: measured duration")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "refresh bench: unmeasured warmup")
	flag.IntVar(&o.setupConc, "setup-c", 4, "refresh bench: concurrent sign-ins while obtaining the grants (each costs the server a bcrypt)")
	flag.BoolVar(&o.json, "json", false, "refresh bench: print one JSON object instead of text")
	flag.Parse()
	if o.base == "" || o.username == "" || o.password == "" || o.conc < 1 || o.setupConc < 1 || o.dur <= 0 {
		fmt.Fprintln(os.Stderr, "usage: oauthtoken -url URL -username U -password P [-scope S] [-redirect URI] [-refresh-bench -c N -d DUR]")
		os.Exit(2)
	}
	o.base = strings.TrimRight(o.base, "/")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	if o.refreshBench {
		err = refreshBench(ctx, o)
	} else {
		err = printTokens(ctx, o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "oauthtoken:", err)
		os.Exit(1)
	}
}

// client is the HTTP side of one public client application.
type client struct {
	o      options
	http   *http.Client // keep-alive, no cookies, no redirects
	meta   metadata
	id     string
	tokens string // token endpoint
}

type metadata struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	RegistrationEndpoint  string `json:"registration_endpoint"`
}

type tokens struct {
	ClientID     string `json:"client_id"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope"`
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func newClient(ctx context.Context, o options, conns int) (*client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = conns+8, conns+8
	tr.DisableCompression = true
	c := &client{o: o, http: &http.Client{Transport: tr, CheckRedirect: noRedirect, Timeout: 30 * time.Second}}
	// Discovery names the endpoints, so nothing here hard-codes their paths.
	resp, body, err := c.do(ctx, http.MethodGet, o.base+"/.well-known/oauth-authorization-server", "", "", nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("discovery: status %d: %s", resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, &c.meta); err != nil || c.meta.TokenEndpoint == "" || c.meta.AuthorizationEndpoint == "" {
		return nil, fmt.Errorf("discovery: unexpected document: %s", body)
	}
	c.tokens = c.meta.TokenEndpoint
	c.id = o.clientID
	if c.id == "" {
		if err := c.register(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// do sends one request and reads the whole answer.
func (c *client) do(ctx context.Context, method, target, contentType, body string, hc *http.Client) (*http.Response, []byte, error) {
	if hc == nil {
		hc = c.http
	}
	req, err := http.NewRequestWithContext(ctx, method, target, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func (c *client) register(ctx context.Context) error {
	reg, _ := json.Marshal(map[string]any{"client_name": "oauthtoken bench", "redirect_uris": []string{c.o.redirect}})
	endpoint := c.meta.RegistrationEndpoint
	if endpoint == "" {
		endpoint = c.o.base + "/api/v1/oauth/register"
	}
	resp, body, err := c.do(ctx, http.MethodPost, endpoint, "application/json", string(reg), nil)
	if err != nil {
		return fmt.Errorf("register: %w", err)
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("register: status %d: %s (is the redirect host allowed? switchboard oauth allow-host HOST)", resp.StatusCode, body)
	}
	var out struct {
		ClientID string `json:"client_id"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.ClientID == "" {
		return fmt.Errorf("register: unexpected answer: %s", body)
	}
	c.id = out.ClientID
	return nil
}

func random() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

var (
	formRE   = regexp.MustCompile(`(?is)<form\b[^>]*>.*?</form>`)
	tagRE    = regexp.MustCompile(`(?is)<(?:input|button)\b[^>]*>`)
	attrRE   = regexp.MustCompile(`(?is)\b(name|value|type|action)="([^"]*)"`)
	actionRE = regexp.MustCompile(`(?is)<form\b[^>]*\baction="([^"]*)"`)
)

// pageForm returns the first form's action and its hidden fields.
func pageForm(page []byte) (action string, fields url.Values, err error) {
	f := formRE.Find(page)
	if f == nil {
		return "", nil, errors.New("the page has no form")
	}
	if m := actionRE.FindSubmatch(f); m != nil {
		action = html.UnescapeString(string(m[1]))
	}
	fields = url.Values{}
	for _, tag := range tagRE.FindAll(f, -1) {
		attrs := map[string]string{}
		for _, a := range attrRE.FindAllSubmatch(tag, -1) {
			attrs[strings.ToLower(string(a[1]))] = html.UnescapeString(string(a[2]))
		}
		if attrs["type"] == "hidden" && attrs["name"] != "" {
			fields.Set(attrs["name"], attrs["value"])
		}
	}
	return action, fields, nil
}

// resolve makes ref (as a page or a Location header gives it) absolute.
func resolve(base, ref string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	return b.ResolveReference(r).String(), nil
}

func short(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// obtain runs the whole flow once, as one browser (its own cookie jar), and
// returns the tokens of a new grant.
func (c *client) obtain(ctx context.Context) (tokens, error) {
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Transport: c.http.Transport, Jar: jar, CheckRedirect: noRedirect, Timeout: 30 * time.Second}
	verifier, state := random(), random()[:16]
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {c.id},
		"redirect_uri":          {c.o.redirect},
		"scope":                 {c.o.scope},
		"state":                 {state},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"},
	}
	authorize := c.meta.AuthorizationEndpoint + "?" + q.Encode()

	// 1. The sign-in page, which sets the CSRF cookie.
	resp, page, err := c.do(ctx, http.MethodGet, authorize, "", "", browser)
	if err != nil {
		return tokens{}, fmt.Errorf("authorize: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return tokens{}, fmt.Errorf("authorize: status %d (Location %q): %s", resp.StatusCode, resp.Header.Get("Location"), short(page))
	}
	action, form, err := pageForm(page)
	if err != nil {
		return tokens{}, fmt.Errorf("sign-in page: %w", err)
	}
	// 2. Sign in: the form's hidden request and csrf_token fields, plus the cookie.
	form.Set("username", c.o.username)
	form.Set("password", c.o.password)
	if action, err = resolve(authorize, action); err != nil {
		return tokens{}, err
	}
	resp, body, err := c.do(ctx, http.MethodPost, action, "application/x-www-form-urlencoded", form.Encode(), browser)
	if err != nil {
		return tokens{}, fmt.Errorf("sign in: %w", err)
	}
	if resp.StatusCode != http.StatusSeeOther {
		return tokens{}, fmt.Errorf("sign in: status %d: %s", resp.StatusCode, short(body))
	}
	// 3. The consent page.
	consent, err := resolve(action, resp.Header.Get("Location"))
	if err != nil {
		return tokens{}, err
	}
	resp, page, err = c.do(ctx, http.MethodGet, consent, "", "", browser)
	if err != nil {
		return tokens{}, fmt.Errorf("consent page: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return tokens{}, fmt.Errorf("consent page: status %d: %s", resp.StatusCode, short(page))
	}
	if action, form, err = pageForm(page); err != nil {
		return tokens{}, fmt.Errorf("consent page: %w", err)
	}
	// 4. Approve: the answer redirects to the client with the code.
	form.Set("decision", "approve")
	if action, err = resolve(consent, action); err != nil {
		return tokens{}, err
	}
	resp, body, err = c.do(ctx, http.MethodPost, action, "application/x-www-form-urlencoded", form.Encode(), browser)
	if err != nil {
		return tokens{}, fmt.Errorf("approve: %w", err)
	}
	if resp.StatusCode != http.StatusSeeOther {
		return tokens{}, fmt.Errorf("approve: status %d: %s", resp.StatusCode, short(body))
	}
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return tokens{}, fmt.Errorf("approve: bad redirect: %w", err)
	}
	bq := back.Query()
	switch {
	case bq.Get("error") != "":
		return tokens{}, fmt.Errorf("approve: %s: %s", bq.Get("error"), bq.Get("error_description"))
	case bq.Get("state") != state:
		return tokens{}, fmt.Errorf("approve: state %q came back, want %q", bq.Get("state"), state)
	case c.meta.Issuer != "" && bq.Get("iss") != c.meta.Issuer:
		return tokens{}, fmt.Errorf("approve: iss %q, want %q", bq.Get("iss"), c.meta.Issuer)
	case bq.Get("code") == "":
		return tokens{}, fmt.Errorf("approve: no code in %s", back)
	}
	// 5. Exchange the code, proving the verifier.
	return c.token(ctx, url.Values{"grant_type": {"authorization_code"}, "code": {bq.Get("code")},
		"code_verifier": {verifier}, "client_id": {c.id}, "redirect_uri": {c.o.redirect}})
}

// token POSTs to the token endpoint and decodes the answer.
func (c *client) token(ctx context.Context, form url.Values) (tokens, error) {
	resp, body, err := c.do(ctx, http.MethodPost, c.tokens, "application/x-www-form-urlencoded", form.Encode(), nil)
	if err != nil {
		return tokens{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return tokens{}, fmt.Errorf("token (%s): status %d: %s", form.Get("grant_type"), resp.StatusCode, short(body))
	}
	var t tokens
	if err := json.Unmarshal(body, &t); err != nil || t.AccessToken == "" || t.RefreshToken == "" {
		return tokens{}, fmt.Errorf("token (%s): unexpected answer: %s", form.Get("grant_type"), short(body))
	}
	t.ClientID = c.id
	return t, nil
}

func (c *client) refresh(ctx context.Context, refreshToken string) (tokens, error) {
	return c.token(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}, "client_id": {c.id}})
}

func printTokens(ctx context.Context, o options) error {
	c, err := newClient(ctx, o, 1)
	if err != nil {
		return err
	}
	t, err := c.obtain(ctx)
	if err != nil {
		return err
	}
	out, _ := json.Marshal(t)
	fmt.Println(string(out))
	return nil
}

type benchResult struct {
	Concurrency  int     `json:"concurrency"`
	SetupSeconds float64 `json:"setup_seconds"` // obtaining the grants through the flow
	Seconds      float64 `json:"seconds"`
	Grants       int     `json:"grants"`
	Errors       int     `json:"errors"`
	GrantsPerSec float64 `json:"grants_per_second"`
	P50ms        float64 `json:"p50_ms"`
	P95ms        float64 `json:"p95_ms"`
	P99ms        float64 `json:"p99_ms"`
	MaxMs        float64 `json:"max_ms"`
	FirstError   string  `json:"first_error,omitempty"`
}

func refreshBench(ctx context.Context, o options) error {
	c, err := newClient(ctx, o, o.conc)
	if err != nil {
		return err
	}
	// Each goroutine's own grant, through the whole flow; a few at a time,
	// since every sign-in costs the server a bcrypt comparison.
	setup := time.Now()
	grants := make([]string, o.conc)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, o.setupConc)
	for i := range grants {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			t, err := c.obtain(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = fmt.Errorf("grant %d: %w", i, err)
			}
			grants[i] = t.RefreshToken
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	setupTook := time.Since(setup)

	start := time.Now().Add(o.warmup)
	end := start.Add(o.dur)
	lat := make([][]time.Duration, o.conc)
	errCount := make([]int, o.conc)
	var firstErr error
	for i := range grants {
		wg.Go(func() {
			tok := grants[i]
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				out, err := c.refresh(ctx, tok)
				t1 := time.Now()
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					// A failed rotation leaves this goroutine without a
					// usable token (or its grant revoked): it stops.
					errCount[i]++
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				tok = out.RefreshToken
				if !t0.Before(start) && !t1.After(end) {
					lat[i] = append(lat[i], t1.Sub(t0))
				}
			}
		})
	}
	wg.Wait()
	elapsed := o.dur
	if now := time.Now(); ctx.Err() != nil && now.Before(end) {
		elapsed = max(0, now.Sub(start))
	}

	var all []time.Duration
	errs := 0
	for i := range lat {
		all = append(all, lat[i]...)
		errs += errCount[i]
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		idx := int(p/100*float64(len(all)) + 0.5)
		idx = min(max(idx-1, 0), len(all)-1)
		return float64(all[idx]) / float64(time.Millisecond)
	}
	r := benchResult{Concurrency: o.conc, SetupSeconds: setupTook.Seconds(), Seconds: elapsed.Seconds(), Grants: len(all), Errors: errs,
		P50ms: pct(50), P95ms: pct(95), P99ms: pct(99), MaxMs: pct(100)}
	if elapsed > 0 {
		r.GrantsPerSec = float64(len(all)) / elapsed.Seconds()
	}
	if firstErr != nil {
		r.FirstError = firstErr.Error()
	}
	if o.json {
		out, _ := json.Marshal(r)
		fmt.Println(string(out))
	} else {
		fmt.Printf("POST %s grant_type=refresh_token  c=%d d=%s warmup=%s (grants obtained through the flow in %.1fs)\n",
			c.tokens, o.conc, o.dur, o.warmup, r.SetupSeconds)
		fmt.Printf("grants %d  errors %d  %.0f grants/s  p50 %.2fms  p95 %.2fms  p99 %.2fms  max %.1fms\n",
			r.Grants, r.Errors, r.GrantsPerSec, r.P50ms, r.P95ms, r.P99ms, r.MaxMs)
		if firstErr != nil {
			fmt.Printf("first error: %v\n", firstErr)
		}
	}
	if errs > 0 {
		return fmt.Errorf("%d refresh grants failed", errs)
	}
	return ctx.Err()
}
