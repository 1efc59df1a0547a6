package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestAppSessionInBrowser: the app's sign-in lasts (docs/decisions.md, "The
// app's session"). After one sign-in a new tab, a reload and a link from
// another site are signed in; the browser keeps an HttpOnly,
// SameSite=Strict cookie that outlives it, and no token is readable by
// script anywhere; signing out in one tab signs out the other at once and
// the session answers no one after.
func TestAppSessionInBrowser(t *testing.T) {
	t.Parallel()
	requireAxe(t)
	b := newAppBrowser(t)
	db := storetest.DSN(t, store.SQLite)
	acct, maria, _ := createAppTeam(t, db)
	createLine(t, db, acct, "--number", "4155550100", "--name", "Front desk", "--users", ids(maria))
	base := startServer(t, db)

	// The holder keeps the browser context open whichever tab closes.
	holder, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(holder, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("browser: the holder tab: %v", err)
	}
	beside := chromedp.WithExistingBrowserContext(chromedp.FromContext(holder).BrowserContextID)
	inbox := `location.pathname.startsWith("/app/inbox") && !!document.querySelector(".inbox") && !document.querySelector(".list-status .spinner")`

	one := b.openAppWith(base, "maria-1", beside)
	one.do("wait for the sign-in page", chromedp.WaitVisible(chromedp.ID("sign-in")))
	page := one.text()
	if !strings.Contains(page, "Sign in to Switchboard") || strings.Contains(page, "wants to") || strings.Contains(page, "asks for") {
		t.Errorf("the app's sign-in page reads as a third party asking for access:\n%s", page)
	}
	one.screenshots("sign-in-page")
	one.axe("the app's sign-in page")
	one.signIn("maria", "maria-password")

	c := one.sessionCookie()
	if c == nil {
		t.Fatal("no session cookie after signing in")
	}
	if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Path != "/app/" || c.Secure || c.Session {
		t.Errorf("session cookie: HttpOnly %t, SameSite %s, Path %s, Secure %t (plain http on loopback), session-only %t; want HttpOnly, Strict, /app/, kept past a restart",
			c.HTTPOnly, c.SameSite, c.Path, c.Secure, c.Session)
	}
	if days := time.Until(time.Unix(int64(c.Expires), 0)).Hours() / 24; days < 29 || days > 31 {
		t.Errorf("session cookie expires in %.1f days, want the absolute limit (30)", days)
	}

	// A new tab (a ctrl-click, a teammate's link): signed in, no password.
	two := b.openAppWith(base, "maria-2", beside)
	two.waitJS("the new tab's inbox, signed in", inbox, 15*time.Second)
	if strings.Contains(two.location(), "/oauth/") {
		t.Errorf("the new tab went to the sign-in page")
	}
	two.checkTokens()
	// A reload: still signed in.
	two.do("reload", chromedp.Reload())
	two.waitJS("the inbox after a reload", inbox, 15*time.Second)
	two.checkTokens()
	// A link from another site (a data: page is another origin): the
	// SameSite=Strict cookie is not sent with that navigation, but it is with
	// the app's own requests afterwards, so the app opens signed in.
	two.do("open a page of another site", chromedp.Navigate(`data:text/html,<a id="go" href="`+base+`/app/inbox">the inbox</a>`))
	two.do("follow its link to the app", chromedp.Click(chromedp.ID("go")))
	two.waitJS("the inbox through a link from another site", inbox, 15*time.Second)
	two.checkTokens()
	one.checkTokens()
	two.screenshots("new-tab-signed-in")

	// Sign out in one tab: the other is signed out at once, and the session
	// is gone on the server.
	kept := c.Value
	one.do("sign out", chromedp.Click(chromedp.CSS(".who button")))
	one.waitText("the signed-out screen", "main", "You signed out", 5*time.Second)
	two.waitText("the other tab, signed out", "main", "You signed out in another tab", 5*time.Second)
	two.waitJS("a sign-in button", `[...document.querySelectorAll("main button")].some((b) => b.textContent === "Sign in")`, 2*time.Second)
	two.screenshots("signed-out-by-another-tab")
	two.axe("the signed-out screen")
	if got := sessionTokenStatus(t, base, kept); got != http.StatusUnauthorized {
		t.Errorf("the session after signing out: %d, want 401", got)
	}
	if one.sessionCookie() != nil {
		t.Errorf("the browser kept the session cookie after signing out")
	}
	one.checkTokens()
	two.checkTokens()

	// Signing in again in one tab brings the signed-out one back.
	one.do("sign in again", chromedp.Click(chromedp.CSS("main button")))
	one.signIn("maria", "maria-password")
	two.waitJS("the other tab, signed in again", inbox, 15*time.Second)
	two.checkTokens()
	var grants struct {
		Grants []struct {
			Revoked bool `json:"revoked"`
		} `json:"grants"`
	}
	cliJSON(t, db, &grants, "oauth", "grants", "--account", fmt.Sprint(acct), "--user", fmt.Sprint(maria))
	if n := len(grants.Grants); n != 2 || !grants.Grants[0].Revoked || grants.Grants[1].Revoked {
		t.Errorf("maria's grants: %+v, want the first revoked by the sign-out and the second live", grants.Grants)
	}
}
