package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// receiver is a local webhook endpoint: the baseline the stream is measured
// against in the same run (as bench/webhooks measures the dispatcher). It
// answers 204 at once and times every message.sent delivery against its
// send, per phase of the run.
type receiver struct {
	ledger     *ledger
	deliveries atomic.Int64
	byPhase    [phases]struct {
		n   atomic.Int64
		lat bounds
	}
	url string
	srv *http.Server
}

const (
	phaseBaseline int32 = iota // sends with no stream open
	phaseStreams               // sends with every stream open
	phases
)

func startReceiver(l *ledger) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{ledger: l, url: "http://" + ln.Addr().String() + "/hook"}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	now := time.Now()
	r.deliveries.Add(1)
	if seq, ok := r.ledger.seqOf(b); ok {
		p := &r.byPhase[r.ledger.phase[seq].Load()]
		if p.lat.add(now, r.ledger, seq) {
			p.n.Add(1)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// subscribe creates an enabled AccountSMS webhook to the receiver through
// the API and returns its id (the server must allow 127.0.0.1:
// --webhook-allow-hosts).
func subscribe(ctx context.Context, client *http.Client, api, key, url string) (string, error) {
	body, _ := json.Marshal(map[string]any{"name": "streams benchmark", "url": url, "type": "AccountSMS", "enabled": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, api+"/webhooks", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("POST /webhooks: status %d: %.300s", resp.StatusCode, b)
	}
	var out struct {
		Data struct {
			ID json.RawMessage `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return "", fmt.Errorf("POST /webhooks: %w", err)
	}
	return string(bytes.Trim(out.Data.ID, `"`)), nil
}

// unsubscribe deletes the webhook, so that later runs on the same database
// do not deliver to a receiver that is gone.
func unsubscribe(client *http.Client, api, key, id string) error {
	req, err := http.NewRequest(http.MethodDelete, api+"/webhooks/"+id, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("DELETE /webhooks/%s: status %d", id, resp.StatusCode)
	}
	return nil
}
