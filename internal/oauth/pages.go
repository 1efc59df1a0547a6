package oauth

import (
	"bytes"
	"html/template"
	"net/http"
	"net/url"

	"switchboard/internal/auth"
)

// scopeWords says what each scope lets an application do, in words a person
// deciding on the consent page understands.
var scopeWords = map[auth.Scope]string{
	auth.WebhooksRead:   "See your account's webhooks",
	auth.WebhooksWrite:  "Create, change, turn on or off and delete webhooks",
	auth.ReportsRead:    "See call history and call analytics",
	auth.UsersRead:      "See the people in your account and their contact details",
	auth.SMSRead:        "See your text-message numbers, blocked senders, scheduled messages, templates and drafts",
	auth.SMSWrite:       "Manage conversations: resolve, reopen, assign, comment, block senders, cancel scheduled messages, edit templates and drafts; it cannot send anything",
	auth.SMSSend:        "Send text messages from your numbers; this spends money",
	auth.RecordingsRead: "Listen to call recordings and read transcripts; the most sensitive data",
	auth.MessagesRead:   "Read your conversations and see which messages are unread",
	auth.MessagesWrite:  "Mark messages and conversations as read or unread",
}

type scopeLine struct{ Name, Words string }

type pageData struct {
	Title string
	// Heading, when set, is the page's heading instead of Title.
	Heading string
	// FirstParty is the sign-in of Switchboard's own app: no third party
	// asks for anything, so the page says only "sign in to Switchboard".
	FirstParty bool
	// Error is shown above the form, or alone on an error page.
	Error string
	// Message is the body of an error page.
	Message string

	ClientName   string
	RedirectHost string
	Scopes       []scopeLine
	Action       string
	Request      string
	CSRF         string
	Username     string
}

var pages = template.Must(template.New("").Parse(`
{{define "head"}}<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{{.Title}} · Switchboard</title>
<style>
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1f24;background:#f3f4f6}
main{max-width:26rem;margin:2rem auto;padding:1.5rem;background:#fff;border-radius:.75rem;box-shadow:0 1px 3px rgba(0,0,0,.12)}
@media (max-width:28rem){main{margin:0;border-radius:0;min-height:100vh}}
h1{font-size:1.35rem;margin:0 0 1rem}
label{display:block;font-weight:600;margin:.9rem 0 .3rem}
input[type=text],input[type=password]{width:100%;font-size:1rem;padding:.65rem .75rem;border:1px solid #9aa1ab;border-radius:.4rem}
button{display:block;width:100%;font-size:1rem;font-weight:600;padding:.75rem;margin-top:1.2rem;border:0;border-radius:.4rem;background:#1f5fbf;color:#fff;cursor:pointer}
button.secondary{background:#e5e7eb;color:#1b1f24;margin-top:.6rem}
.error{background:#fdecec;color:#8a1c1c;border:1px solid #f3b4b4;padding:.6rem .75rem;border-radius:.4rem}
.note{color:#4b5563;font-size:.9rem}
ul.scopes{padding-left:1.1rem}
ul.scopes li{margin:.4rem 0}
code{font-size:.9em;background:#f3f4f6;padding:.05rem .3rem;border-radius:.25rem}
</style>
</head>
<body>
<main>
<h1>{{if .Heading}}{{.Heading}}{{else}}{{.Title}}{{end}}</h1>
{{end}}

{{define "foot"}}</main>
</body>
</html>
{{end}}

{{define "login"}}{{template "head" .}}
{{if .FirstParty}}<p>Sign in with your Switchboard username and password.</p>
{{else}}<p><strong>{{.ClientName}}</strong> wants to use your Switchboard account. Sign in to continue.</p>{{end}}
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="request" value="{{.Request}}">
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
<label for="username">Username</label>
<input type="text" id="username" name="username" value="{{.Username}}" autocomplete="username" autocapitalize="none" autocorrect="off" spellcheck="false" required autofocus>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<button type="submit" id="sign-in">Sign in</button>
</form>
{{if not .FirstParty}}<p class="note">After you sign in you will see what {{.ClientName}} asks for, and you can still say no.</p>{{end}}
{{template "foot"}}{{end}}

{{define "consent"}}{{template "head" .}}
<p><strong>{{.ClientName}}</strong> wants to:</p>
<ul class="scopes">
{{range .Scopes}}<li><code>{{.Name}}</code> — {{.Words}}</li>
{{end}}</ul>
<p>Whatever you choose, you will be sent back to <strong>{{.RedirectHost}}</strong>.</p>
<p class="note">The application chose its own name; Switchboard has not checked it. Allow only if you trust {{.RedirectHost}}.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="request" value="{{.Request}}">
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
<button type="submit" name="decision" value="approve" id="approve">Allow</button>
<button type="submit" name="decision" value="deny" id="deny" class="secondary">Deny</button>
</form>
{{template "foot"}}{{end}}

{{define "error"}}{{template "head" .}}
<p class="error" role="alert">{{.Message}}</p>
<p class="note">Go back to the application you came from and start again.</p>
{{template "foot"}}{{end}}
`))

// page writes a server-rendered page with the security headers every HTML
// response carries. redirectURI, when known, is the client's: the consent
// form's answer is a redirect there, which form-action must allow.
func (s *Server) page(w http.ResponseWriter, r *http.Request, status int, name string, data pageData, redirectURI string) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		s.log.ErrorContext(r.Context(), "render oauth page", "page", name, "err", err)
		status, buf = http.StatusInternalServerError, *bytes.NewBufferString("Something went wrong. Please try again.\n")
	}
	formAction := "'self'"
	if o := origin(redirectURI); o != "" {
		formAction += " " + o
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action "+formAction+"; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if s.secure {
		// The sign-in form carries a password: once a browser has reached
		// it over https, it must never be offered it over plain http again.
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// errorPage is the answer when redirecting back to the client is unsafe or
// impossible (unknown client, unregistered redirect URI, expired request).
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, status int, title, message string) {
	s.page(w, r, status, "error", pageData{Title: title, Message: message}, "")
}

// origin returns scheme://host[:port] of a URL, or "" when it has none.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// describeScopes lists scopes with their words, in the order of auth.AllScopes.
func describeScopes(scopes []string) []scopeLine {
	out := make([]scopeLine, 0, len(scopes))
	for _, sc := range auth.AllScopes {
		for _, want := range scopes {
			if string(sc) == want {
				out = append(out, scopeLine{Name: want, Words: scopeWords[sc]})
			}
		}
	}
	return out
}
