package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestAppContactsAndSearchInBrowser: who the team talks to has a name
// (issue 33). A contact added through the API names its conversation in
// the list and the thread; the contacts screen finds, adds (a number
// another contact holds is refused inside the editor, nothing typed lost),
// imports a CSV with its report, and shows a contact's page with its
// texts; a thread's number becomes a contact from the thread; a team
// reply's variables are filled from the contact; the header's search finds contacts, conversations and words of
// texts, the words marked; "New text" finds a contact by name.
// setValue sets a field's value as a script would (what a choice from a
// list of suggestions does), without typing.
func setValue(id, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById(%q).value = %q`, id, value))
}

func TestAppContactsAndSearchInBrowser(t *testing.T) {
	t.Parallel()
	requireAxe(t)
	b := newAppBrowser(t)
	db := storetest.DSN(t, store.SQLite)
	acct, maria, _ := createAppTeam(t, db)
	desk := createLine(t, db, acct, "--number", "4155550100", "--name", "Front desk", "--users", ids(maria)).Number
	cliJSON(t, db, &struct{}{}, "rate", "set", "--account", fmt.Sprint(acct), "--prefix", "1", "--sms", "0.0079", "--mms", "0.02")
	key := createKey(t, db, acct, "front desk system", "all").Key
	base := startServer(t, db)
	appAPIKeySend(t, base, key, desk, "12125550101", "Your appointment is rescheduled to Tuesday.")
	appAPIKeySend(t, base, key, desk, "12125550102", "Your invoice is ready.")
	if r := postJSON(t, base+apiPrefix+"/contacts", key, `{"name": "José Núñez", "company": "Harbor Dental", "numbers": [{"number": "+1 212 555 0101", "label": "mobile"}]}`); r.status != 201 {
		t.Fatalf("POST /contacts: status %d\n%s", r.status, r.body)
	}

	if r := postJSON(t, base+apiPrefix+"/sms/templates", key, `{"title": "Confirm", "body": "Hi {first_name}, your visit at {company} is confirmed.", "shared": true}`); r.status != 201 {
		t.Fatalf("POST /sms/templates: status %d\n%s", r.status, r.body)
	}

	mt := b.signIn(base, "maria", "maria-password")
	// ---- names in the list and the thread ----
	mt.waitText("the contact's name in the list", ".conv-list", "José Núñez", 5*time.Second)
	mt.waitText("the number beneath it", ".conv-list .conv-number", "(212) 555-0101", 2*time.Second)
	mt.do("open the named conversation", chromedp.Click(chromedp.CSS(`a.conv[href*="/12125550101"]`)))
	mt.waitJS("the thread titled by the contact", `document.querySelector("#thread-title")?.textContent === "José Núñez" && !!document.querySelector(".thread-contact a")`, 5*time.Second)

	// ---- a team reply's variables, filled from the contact ----
	mt.do("open the saved replies", chromedp.Click(chromedp.CSS(".cmp-replies summary")))
	mt.waitText("the team reply, filled in its preview", ".cmp-replies", "Hi José, your visit at Harbor Dental is confirmed.", 5*time.Second)
	mt.do("insert it", chromedp.Click(chromedp.CSS(".cmp-reply")))
	mt.waitJS("the filled text in the box", `document.querySelector("form.composer textarea").value === "Hi José, your visit at Harbor Dental is confirmed."`, 3*time.Second)

	// ---- a number no contact holds becomes one from its thread ----
	mt.do("open the other conversation", chromedp.Click(chromedp.CSS(`a.conv[href*="/12125550102"]`)))
	mt.do("add it to the contacts", chromedp.Click(chromedp.CSS(`.thread-contact .add-contact`)))
	mt.do("name it", chromedp.WaitVisible(chromedp.ID("contact-name")), chromedp.SendKeys(chromedp.ID("contact-name"), "Ann Lee"),
		chromedp.Click(chromedp.CSS(`dialog .btn-primary`)))
	mt.waitJS("the thread titled by the new contact", `document.querySelector("#thread-title")?.textContent === "Ann Lee"`, 5*time.Second)
	mt.waitText("the list names it too", ".conv-list", "Ann Lee", 5*time.Second)

	// ---- the contacts screen: the list, a refusal kept in the editor, a new contact ----
	mt.do("open Contacts", chromedp.Click(chromedp.CSS(`a.nav-link[data-nav=contacts]`)))
	mt.waitText("the contact in the list", ".contacts-table", "Harbor Dental", 5*time.Second)
	mt.screenshots("contacts")
	mt.axe("the contacts list")
	mt.do("new contact", chromedp.Click(chromedp.CSS(`.page-actions .btn-primary`)))
	mt.do("fill the editor", chromedp.WaitVisible(chromedp.ID("contact-name")),
		chromedp.SendKeys(chromedp.ID("contact-name"), "Bo Chen"),
		chromedp.SendKeys(chromedp.ID("contact-number-0"), "(212) 555-0101"))
	mt.do("save", chromedp.Click(chromedp.CSS(`dialog .btn-primary`)))
	mt.waitText("the refusal naming the holder, in the editor", "dialog .dialog-error", "José Núñez", 5*time.Second)
	if v := appEval[string](mt, "read the name field", `document.getElementById("contact-name").value`); v != "Bo Chen" {
		t.Errorf("after the refusal the name field holds %q, want what was typed", v)
	}
	mt.screenshots("contact-refused")
	mt.axe("the contact editor")
	mt.do("give another number", setValue("contact-number-0", "(212) 555-0103"),
		chromedp.Click(chromedp.CSS(`dialog .btn-primary`)))
	mt.waitJS("the new contact's page", `location.pathname.startsWith("/app/contacts/") && document.querySelector("h1")?.textContent === "Bo Chen"`, 5*time.Second)
	mt.waitText("nothing with him yet", ".contact-timeline", "No texts or calls", 5*time.Second)
	mt.do("back to the list", chromedp.Click(chromedp.CSS(`a.back`)))
	mt.do("open Ann Lee's page", chromedp.WaitVisible(chromedp.CSS(`.contacts-table a`)),
		chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll(".contacts-table a")].find((a) => a.textContent === "Ann Lee").click()`))
	mt.waitText("her text in the timeline", ".contact-timeline", "invoice is ready", 5*time.Second)
	mt.screenshots("contact-page")
	mt.axe("a contact's page")

	// ---- import a CSV: two new, one skipped with its line ----
	csv := filepath.Join(t.TempDir(), "people.csv")
	if err := os.WriteFile(csv, []byte("Name,Phone,Company\nRosa Díaz,(646) 555-0199,Nine-Nine\nNo Number,,Nowhere\nLi Wei,+44 20 7946 0958,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mt.do("back to the list", chromedp.Click(chromedp.CSS(`a.back`)))
	mt.waitText("the list", ".contacts-table", "Bo Chen", 5*time.Second)
	mt.do("import the file", chromedp.SetUploadFiles(chromedp.ID("contacts-file"), []string{csv}))
	mt.waitText("the import's report", ".page", "Import finished: 2 created, 0 updated, 1 skipped.", 10*time.Second)
	mt.waitText("an imported contact in the list", ".contacts-table", "Rosa Díaz", 5*time.Second)
	mt.do("find by digits", chromedp.SendKeys(chromedp.ID("contacts-q"), "7946"))
	mt.waitJS("only the matching contact", `location.search === "?q=7946" && document.querySelectorAll(".contacts-table tbody tr").length === 1 && document.querySelector(".contacts-table").innerText.includes("Li Wei")`, 5*time.Second)

	// ---- results as one types in the header ----
	mt.do("type a name in the search field", chromedp.Click(chromedp.ID("app-search")), chromedp.SendKeys(chromedp.ID("app-search"), "Ros"))
	mt.waitText("the contact offered as one types", ".quick-results .hit-contact", "Rosa Díaz", 5*time.Second)
	mt.screenshots("quick-results")
	mt.do("close them", chromedp.KeyEvent("\x1b"))
	mt.waitJS("closed", `document.getElementById("quick-results").hidden`, 3*time.Second)
	mt.do("empty the field", setValue("app-search", ""))

	// ---- search from the header: "/" then words ----
	mt.do("focus search with /", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), chromedp.KeyEvent("/"))
	mt.waitJS("the search field focused", `document.activeElement.id === "app-search"`, 3*time.Second)
	mt.do("search a word's beginning", chromedp.SendKeys(chromedp.ID("app-search"), "resched\r"))
	mt.waitJS("the message found, its word marked", `location.pathname === "/app/search" && document.querySelector(".hit-message mark")?.textContent === "rescheduled"`, 5*time.Second)
	mt.screenshots("search")
	mt.axe("the search results")
	mt.do("open the message found", chromedp.Click(chromedp.CSS(".hit-message a")))
	mt.waitJS("the thread at the message, marked", `location.pathname.endsWith("/12125550101") && document.querySelector(".msg-found")?.innerText.includes("rescheduled")`, 5*time.Second)
	mt.do("search a name", setValue("app-search", ""), chromedp.SendKeys(chromedp.ID("app-search"), "nunez\r"))
	mt.waitJS("the contact found without its accents", `document.querySelector(".hit-contact .hit-title")?.textContent === "José Núñez"`, 5*time.Second)
	mt.do("search digits", setValue("app-search", ""), chromedp.SendKeys(chromedp.ID("app-search"), "5550102\r"))
	mt.waitJS("the conversation and the contact found by digits", `document.querySelector(".hit-conversation mark")?.textContent === "5550102" && document.querySelector(".hit-contact")?.innerText.includes("Ann Lee")`, 5*time.Second)

	// ---- New text finds a contact by name ----
	mt.do("open New text", chromedp.Click(chromedp.CSS(`.btn-new`)))
	mt.do("type a name", chromedp.WaitVisible(chromedp.ID("new-text-number")), chromedp.SendKeys(chromedp.ID("new-text-number"), "Rosa"))
	mt.waitJS("the contact offered", `[...document.querySelectorAll("#new-text-contacts option")].some((o) => o.label.startsWith("Rosa Díaz") && o.value === "+1 (646) 555-0199")`, 5*time.Second)
	mt.do("choose it", setValue("new-text-number", "+1 (646) 555-0199"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("new-text-number").dispatchEvent(new Event("input"))`))
	mt.waitText("named in the dialog", "#new-text-shown", "To Rosa Díaz, +1 (646) 555-0199", 3*time.Second)
	mt.do("write the text", chromedp.Click(chromedp.CSS(`dialog .btn-primary`)))
	mt.waitJS("the new thread", fmt.Sprintf(`location.pathname === "/app/inbox/%s/16465550199" && !!document.querySelector(".composer textarea")`, desk), 5*time.Second)
	if page := mt.text(); strings.Contains(page, "No such conversation") {
		t.Errorf("the new thread reads as missing:\n%s", page)
	}
}
