package client_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/switchboard-server/switchboard/client"
	"github.com/switchboard-server/switchboard/client/webhook"
)

// Send a text, then follow the account's events from the start of what the
// server holds (the README's example).
func Example() {
	ctx := context.Background()
	api, err := client.New("http://127.0.0.1:8080", os.Getenv("SWITCHBOARD_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	r, err := api.SendSMSWithResponse(ctx, nil, client.SendRequest{From: "14155550100", To: []string{"14155550123"}, Message: client.Ptr("Hello from Go")})
	if err == nil {
		err = client.ResponseError(r.HTTPResponse, r.Body)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("sent", *r.JSON201.Data.Messages[0].Id, "for", r.JSON201.Data.Billing.TotalPrice)
	for ev, err := range api.Events(ctx, client.EventsOptions{After: "evt_0"}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ev.ID, ev.Type, string(ev.Data))
	}
}

// A webhook receiver checks each delivery's signature on the bytes it
// received before it trusts them.
func Example_webhookReceiver() {
	secret := os.Getenv("SWITCHBOARD_WEBHOOK_SECRET") // whsec_…, from POST /webhooks
	http.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(secret, r.Header, body, time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		// r.Header.Get("webhook-id") is the event's id: skip one already handled.
		w.WriteHeader(http.StatusNoContent)
	})
}
