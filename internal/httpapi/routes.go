package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/calls"
	"switchboard/internal/contacts"
)

// routes is the route table: every endpoint Switchboard serves, in one place.
// A public API route names, after its handler, the query parameters it
// takes; any other, or one given twice, is 400 (query.go).
func (s *Server) routes() {
	// Operations.
	s.route("GET /healthz", s.healthz)
	s.route("GET /readyz", s.readyz)

	// Public API.
	s.route("GET "+Prefix+"/openapi.json", s.openapi)
	// Who the credential is (me.go): any valid credential, no scope.
	s.apiScoped("GET /me", "", func(auth.Principal) error { return nil }, s.me)
	s.api("GET /users", auth.UsersRead, s.listUsers)
	s.api("GET /sms/lines", auth.SMSRead, s.listLines)
	s.api("POST /sms/messages", auth.SMSSend, s.budgeted(sendBodyLimit, s.idempotentAt(sendBodyLimit, false, s.sendMessage)))
	// What that send would do, doing nothing (quote.go): sms:read or sms:send.
	s.apiScoped("POST /sms/quote", auth.SMSRead, quoteReadable, s.budgeted(sendBodyLimit, s.quoteMessage))

	// Line resources: blocked senders; saved replies and drafts of the caller.
	s.api("GET /sms/lines/{line}/blocked", auth.SMSRead, s.listBlocked)
	s.api("POST /sms/lines/{line}/blocked", auth.SMSWrite, s.block)
	s.api("GET /sms/lines/{line}/blocked/{number}", auth.SMSRead, s.getBlocked)
	s.api("DELETE /sms/lines/{line}/blocked/{number}", auth.SMSWrite, bodiless(s.unblock))
	s.api("GET /sms/lines/{line}/scheduled", auth.SMSRead, s.listScheduled)
	s.api("POST /sms/lines/{line}/scheduled", auth.SMSSend, s.idempotentAt(defaultBodyLimit, true, s.schedule))
	s.api("DELETE /sms/lines/{line}/scheduled/{id}", auth.SMSWrite, bodiless(s.cancelScheduled))
	s.api("POST /sms/media", auth.SMSSend, s.budgeted(mediaBodyLimit, s.hostMedia))
	s.api("GET /sms/templates", auth.SMSRead, s.listTemplates)
	s.api("POST /sms/templates", auth.SMSWrite, s.createTemplate)
	s.api("PUT /sms/templates/{id}", auth.SMSWrite, s.replaceTemplate)
	s.api("DELETE /sms/templates/{id}", auth.SMSWrite, bodiless(s.deleteTemplate))
	s.api("GET /sms/drafts/{draftId}", auth.SMSRead, s.getDraft)
	s.api("PUT /sms/drafts/{draftId}", auth.SMSWrite, s.putDraft)
	s.api("DELETE /sms/drafts/{draftId}", auth.SMSWrite, bodiless(s.deleteDraft))

	// Call history, and the signed recording links it hands out (public: the
	// signature is the credential).
	if s.calls != nil {
		s.api("POST /calls/search", auth.ReportsRead, s.searchCalls)
		s.api("GET /calls/{callid}", auth.ReportsRead, s.getCall)
		s.api("GET /calls/{callid}/transcripts", auth.RecordingsRead, s.callTranscripts)
		s.api("GET /calls/{callid}/recordings", auth.RecordingsRead, s.callRecordings)
		s.api("GET /calls/{callid}/recordings/{uniqueid}", auth.RecordingsRead, s.callRecording)
		s.mux.Handle("GET "+calls.LinkPrefix, s.metrics.wrap("GET "+calls.LinkPrefix, http.HandlerFunc(s.recordingLink)))
		// The phone system's push endpoint, with its own credential.
		s.route("POST "+IngestPath, s.ingestCalls)
	}
	// Webhook subscriptions: each is a standing read of the whole account,
	// so every operation needs the Webhooks role permission as well.
	s.apiRole("GET /webhooks", auth.WebhooksRead, manageWebhooks, s.listWebhooks, "type", "enabled")
	s.apiRole("POST /webhooks", auth.WebhooksWrite, manageWebhooks, s.createWebhook)
	s.apiRole("GET /webhooks/types", auth.WebhooksRead, manageWebhooks, s.listWebhookTypes)
	s.apiRole("GET /webhooks/{id}", auth.WebhooksRead, manageWebhooks, s.getWebhook)
	s.apiRole("PUT /webhooks/{id}", auth.WebhooksWrite, manageWebhooks, s.updateWebhook)
	s.apiRole("PATCH /webhooks/{id}", auth.WebhooksWrite, manageWebhooks, s.updateWebhook)
	s.apiRole("DELETE /webhooks/{id}", auth.WebhooksWrite, manageWebhooks, bodiless(s.deleteWebhook))
	s.apiRole("POST /webhooks/{id}/enable", auth.WebhooksWrite, manageWebhooks, bodiless(s.setWebhookEnabled(true)))
	s.apiRole("POST /webhooks/{id}/disable", auth.WebhooksWrite, manageWebhooks, bodiless(s.setWebhookEnabled(false)))
	s.apiRole("GET /webhooks/{id}/secret", auth.WebhooksRead, manageWebhooks, s.getWebhookSecret)
	s.apiRole("POST /webhooks/{id}/secret/rotate", auth.WebhooksWrite, manageWebhooks, bodiless(s.rotateWebhookSecret))
	s.apiRole("GET /webhooks/{id}/deliveries", auth.WebhooksRead, manageWebhooks, s.listWebhookDeliveries, "limit", "before")
	s.apiRole("POST /webhooks/{id}/deliveries/{deliveryId}/redeliver", auth.WebhooksWrite, manageWebhooks, bodiless(s.redeliverWebhook))
	s.apiRole("GET /webhooks/{id}/deliveries/{deliveryId}/attempts", auth.WebhooksRead, manageWebhooks, s.listDeliveryAttempts, "limit", "before")
	s.apiRole("POST /webhooks/{id}/recover", auth.WebhooksWrite, manageWebhooks, s.recoverWebhook)
	s.apiRole("GET /webhooks/{id}/recover/{recoverId}", auth.WebhooksRead, manageWebhooks, s.getWebhookRecovery)
	s.apiRole("POST /webhooks/{id}/test", auth.WebhooksWrite, manageWebhooks, bodiless(s.testWebhook))
	// The live event stream (events.go): any of messages:read, sms:read,
	// reports:read; each event only where the credential may read it.
	s.apiScoped("GET /events", auth.MessagesRead, eventsReadable, s.streamEvents, "types", "lines", "after")
	// The shared inbox (conversations.go).
	s.api("GET /sms/unread", auth.MessagesRead, s.unread, "lines", "since")
	s.api("POST /sms/lines/{line}/read", auth.MessagesWrite, s.markLineRead)
	s.api("GET /sms/conversations", auth.MessagesRead, s.listConversations, "lines", "unread", "unresolved", "resolved", "assignedToMe", "unassigned", "limit", "offset")
	s.api("GET /sms/conversations/{line}/{number}", auth.MessagesRead, s.readThread, "markRead", "groupParticipants", "limit", "offset")
	s.api("DELETE /sms/conversations/{line}/{number}", auth.MessagesWrite, bodiless(s.deleteConversation), "groupParticipants")
	s.api("GET /sms/conversations/{line}/{number}/messages/{id}", auth.MessagesRead, s.readThreadAround, "groupParticipants", "limit")
	s.api("DELETE /sms/conversations/{line}/{number}/messages/{id}", auth.MessagesWrite, bodiless(s.deleteMessage), "groupParticipants")
	s.api("POST /sms/conversations/{line}/{number}/read", auth.MessagesWrite, s.markMessages, "groupParticipants")
	s.api("POST /sms/conversations/{line}/{number}/resolve", auth.SMSWrite, s.resolveConversation, "groupParticipants")
	s.api("POST /sms/conversations/{line}/{number}/reopen", auth.SMSWrite, bodiless(s.reopenConversation), "groupParticipants")
	s.api("POST /sms/conversations/{line}/{number}/assign", auth.SMSWrite, s.assignConversation, "groupParticipants")
	s.api("POST /sms/conversations/{line}/{number}/comments", auth.SMSWrite, s.addComment, "groupParticipants")
	s.api("GET /sms/conversations/{line}/{number}/comments", auth.MessagesRead, s.listComments, "groupParticipants")
	s.api("GET /sms/conversations/{line}/{number}/history", auth.MessagesRead, s.conversationHistory, "groupParticipants", "limit", "before")

	// The team (team.go): who works the caller's lines, and the person's
	// notification preferences.
	if s.team != nil {
		s.api("GET /sms/teammates", auth.MessagesRead, s.listTeammates, "lines")
		s.api("GET /me/notifications", auth.MessagesRead, s.getNotifications)
		s.api("PUT /me/notifications", auth.MessagesWrite, s.putNotifications)
	}

	// Search (search.go): what the credential may read, as the inbox's
	// reads allow it.
	if s.search != nil {
		s.api("GET /search", auth.MessagesRead, s.searchAll, "q", "types", "lines", "direction", "from", "to", "resolved", "unresolved", "cursor", "limit")
	}
	// The team address book (contacts.go): messages:read to read, sms:write
	// to write, and a role with phone numbers; deleting needs every line.
	s.apiRole("GET /contacts", auth.MessagesRead, keepContacts, s.listContacts, "q", "limit", "before")
	s.apiRole("POST /contacts", auth.SMSWrite, keepContacts, s.createContact)
	s.apiRole("GET /contacts/export", auth.MessagesRead, keepContacts, s.exportContacts, "format")
	s.apiRole("POST /contacts/import", auth.SMSWrite, keepContacts, s.budgeted(contacts.MaxImportBytes, s.importContacts))
	s.apiRole("GET /contacts/{id}", auth.MessagesRead, keepContacts, s.getContact)
	s.apiRole("PATCH /contacts/{id}", auth.SMSWrite, keepContacts, s.updateContact)
	s.apiRole("DELETE /contacts/{id}", auth.SMSWrite, deleteContacts, bodiless(s.deleteContact))

	// Hosted attachments: public, unguessable names.
	if s.media != nil {
		s.mux.Handle("GET /media/", http.StripPrefix("/media", s.media))
	}

	// Carrier callbacks (delivery reports, inbound texts), authenticated by the driver.
	if s.carrierHooks != nil {
		s.mux.Handle("/carrier/", s.carrierHooks)
	}

	// The OAuth 2.1 authorization server, outside the versioned prefix.
	if s.oauth != nil {
		s.mux.Handle("/.well-known/oauth-authorization-server", s.oauth)
		s.mux.Handle("/oauth/", s.oauth)
		s.mux.Handle("/api/v1/oauth/", s.oauth)
		// The app's sign-in and its session (a token-mediating backend,
		// oauth/session.go): under /app/, where the session cookie is sent.
		s.mux.Handle("/app/signin", s.oauth)
		s.mux.Handle("/app/callback", s.oauth)
		s.mux.Handle("/app/session", s.oauth)
		s.mux.Handle("/app/session/", s.oauth)
	}

	// The Switchboard app: static files, a client of the API above.
	if s.app != nil {
		s.mux.Handle("/app/", s.app)
		s.mux.Handle("GET /app", http.RedirectHandler("/app/", http.StatusMovedPermanently))
	}

	// The API reference: Redoc rendering the document above (internal/apidocs).
	if s.docs != nil {
		s.mux.Handle("/api/docs", s.docs)
		s.mux.Handle("/api/docs/", s.docs)
	}

	// Everything else gets the error envelope: 404, or 405 with Allow.
	s.route("/", s.unmatched)
}

// healthz and readyz answer load balancers, outside the public API: a bare
// status object, not the envelope, written as any encoded body is.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeEncoded(w, http.StatusOK, []byte(`{"status":"ok"}`+"\n"))
	return nil
}

// readyTimeout bounds GET /readyz's database check.
const readyTimeout = 2 * time.Second

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	// Bounded: a load balancer must learn within seconds that this node
	// cannot reach its database, even when connecting there hangs.
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.log.WarnContext(r.Context(), "not ready", "err", err)
		writeEncoded(w, http.StatusServiceUnavailable, []byte(`{"status":"unavailable"}`+"\n"))
		return nil
	}
	if s.carrierStates == nil {
		writeEncoded(w, http.StatusOK, []byte(`{"status":"ready"}`+"\n"))
		return nil
	}
	// The carrier connections are detail: a connection down does not make
	// the node unready (its API, inbox and other lines still work).
	b, err := json.Marshal(struct {
		Status   string `json:"status"`
		Carriers any    `json:"carriers"`
	}{"ready", s.carrierStates()})
	if err != nil {
		return err
	}
	writeEncoded(w, http.StatusOK, append(b, '\n'))
	return nil
}
