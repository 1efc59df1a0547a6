package store_test

import (
	"sync"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// Sends that share a group commit (on PostgreSQL their conversation updates
// are merged and made at the group's end) leave each conversation led by its
// newest message, for the team's lists and for a user who has it unread.
func TestConcurrentSendsLeadTheirConversations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		acct := storetest.Account(t, st, nil).ID
		user := storetest.User(t, st, acct, nil).ID
		line := storetest.Line(t, st, acct, nil)
		peers := []string{"12125550101", "12125550102"}
		for _, p := range peers {
			in := store.Inbound{Line: line, From: p, Participants: []string{p}, Body: "hi", Readers: []int64{user}}
			noErr(t, smsevent.SetReceived(&in))
			_, err := st.StoreInbound(ctx, in)
			noErr(t, err)
		}
		send := func(peer string) int64 {
			o := &store.Outbound{AccountID: acct, LineID: line.ID, From: line.Number, To: []string{peer}, Participants: peer,
				Body: "x", Type: domain.BillingSMS, Units: 1, UnitPrice: 7900, Price: 7900}
			id, err := st.CreateOutbound(ctx, o)
			if err == nil {
				err = markOutboundSent(st, o, id)
			}
			if err != nil {
				t.Error(err)
			}
			return id
		}
		var mu sync.Mutex
		newest := map[string]int64{}
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				peer := peers[i%2]
				id := send(peer)
				mu.Lock()
				newest[peer] = max(newest[peer], id)
				mu.Unlock()
			}()
		}
		wg.Wait()
		lead := func(f store.ConversationFilter) map[string]int64 {
			t.Helper()
			f.AccountID, f.Limit = acct, 10
			list, err := st.ListConversations(ctx, f)
			noErr(t, err)
			got := map[string]int64{}
			for _, c := range list {
				got[c.Key.Joined()] = c.LastMessageID
			}
			return got
		}
		if got := lead(store.ConversationFilter{}); got[peers[0]] != newest[peers[0]] || got[peers[1]] != newest[peers[1]] {
			t.Errorf("newest message per conversation = %v, want %v", got, newest)
		}
		// The user's unread list follows: the conversation sent to last leads it.
		for _, p := range []string{peers[1], peers[0], peers[1]} {
			send(p)
			list, err := st.ListConversations(ctx, store.ConversationFilter{AccountID: acct, UserID: user, Unread: true, Limit: 10})
			noErr(t, err)
			if len(list) != 2 || list[0].Key.Joined() != p {
				t.Fatalf("after a send to %s the user's unread list is %v, want it first of 2", p, list)
			}
		}
	})
}

// A conversation update that PostgreSQL refuses at the group's end (where
// the group's sends defer them) fails its own send alone: the group runs
// again with each write in its savepoint, and the other sends commit.
func TestRefusedConversationUpdateFailsItsSendAlone(t *testing.T) {
	nodes, acct, db := fanOutNodes(t, 1)
	st := nodes[0]
	line := storetest.Line(t, st, acct, nil)
	const bad = "12125550199"
	_, err := db.Exec(`CREATE FUNCTION refuse_lead() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.participants = '` + bad + `' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$`)
	noErr(t, err)
	_, err = db.Exec(`CREATE TRIGGER refuse_lead BEFORE UPDATE OF last_message_id ON conversations FOR EACH ROW EXECUTE FUNCTION refuse_lead()`)
	noErr(t, err)
	var wg sync.WaitGroup
	var failed, sent sync.Map
	for i := range 30 {
		peer := "12125550101"
		if i%10 == 0 {
			peer = bad
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &store.Outbound{AccountID: acct, LineID: line.ID, From: line.Number, To: []string{peer}, Participants: peer,
				Body: "x", Type: domain.BillingSMS, Units: 1, UnitPrice: 7900, Price: 7900}
			id, err := st.CreateOutbound(ctx, o)
			if err != nil {
				t.Error(err)
				return
			}
			if err := markOutboundSent(st, o, id); err != nil {
				failed.Store(id, peer)
			} else {
				sent.Store(id, peer)
			}
		}()
	}
	wg.Wait()
	nFailed, nSent := 0, 0
	failed.Range(func(_, p any) bool {
		nFailed++
		if p != bad {
			t.Errorf("a send to %v failed", p)
		}
		return true
	})
	sent.Range(func(_, p any) bool {
		nSent++
		if p == bad {
			t.Errorf("a send to %v was recorded sent", p)
		}
		return true
	})
	var charges int
	noErr(t, db.QueryRow(`SELECT COUNT(*) FROM ledger`).Scan(&charges))
	if nFailed != 3 || nSent != 27 || charges != 27 {
		t.Errorf("%d sends failed, %d sent, %d charges; want 3, 27, 27", nFailed, nSent, charges)
	}
}

// markOutboundSent records intent o, message id, sent, with its event as the
// sms capability builds it.
func markOutboundSent(st *store.Store, o *store.Outbound, id int64) error {
	sent, err := smsevent.Sent(id, o.From, o.To)
	if err != nil {
		return err
	}
	return st.MarkOutboundSent(ctx, o, "ref", sent)
}

// The carrier's acceptance of a send is written without reading anything
// first (on PostgreSQL its statements are queued, and the charge, the event
// and the conversation's lead follow the status in SQL). It still charges
// and leads only a message that moved to sent: one refused meanwhile stays
// failed, uncharged and out of its conversation's lead; one whose receipt
// came first (which charged it) is not charged twice, and gets the
// carrier's reference.
func TestAcceptanceFollowsTheMessagesStatus(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		acct := storetest.Account(t, st, nil).ID
		line := storetest.Line(t, st, acct, nil)
		const peer = "12125550101"
		create := func() (*store.Outbound, int64) {
			o := &store.Outbound{AccountID: acct, LineID: line.ID, From: line.Number, To: []string{peer}, Participants: peer,
				Body: "x", Type: domain.BillingSMS, Units: 1, UnitPrice: 7900, Price: 7900}
			id, err := st.CreateOutbound(ctx, o)
			noErr(t, err)
			return o, id
		}
		leader := func() int64 {
			list, err := st.ListConversations(ctx, store.ConversationFilter{AccountID: acct, Limit: 10})
			noErr(t, err)
			if len(list) != 1 {
				t.Fatalf("%d conversations, want 1", len(list))
			}
			return list[0].LastMessageID
		}
		first, firstID := create()
		noErr(t, markOutboundSent(st, first, firstID))

		// Refused meanwhile: the acceptance changes nothing.
		refused, refusedID := create()
		after, err := st.MarkUnsent(ctx, refusedID, domain.StatusFailed)
		noErr(t, err)
		if after != domain.StatusFailed {
			t.Fatalf("refused message is %s", after)
		}
		noErr(t, markOutboundSent(st, refused, refusedID))
		m, err := st.Message(ctx, acct, refusedID)
		noErr(t, err)
		if m.Status != domain.StatusFailed || m.CarrierRef != "" {
			t.Errorf("refused message after its acceptance: status %s, ref %q; want failed, none", m.Status, m.CarrierRef)
		}
		if got := leader(); got != firstID {
			t.Errorf("conversation led by %d, want %d (the refused %d must not lead)", got, firstID, refusedID)
		}

		// The receipt first: it charges; the acceptance adds the reference.
		early, earlyID := create()
		sent, err := smsevent.Sent(earlyID, early.From, early.To)
		noErr(t, err)
		delivery, err := smsevent.Delivery(earlyID, early.From, early.To, "delivered", "", time.Now())
		noErr(t, err)
		noErr(t, st.ApplyReceipt(ctx, store.Receipt{ID: earlyID, Status: "delivered", At: time.Now(), Sent: sent, Delivery: delivery}))
		noErr(t, markOutboundSent(st, early, earlyID))
		m, err = st.Message(ctx, acct, earlyID)
		noErr(t, err)
		if m.Status != domain.StatusSent || m.CarrierRef != "ref" {
			t.Errorf("message receipted before its acceptance: status %s, ref %q; want sent, ref", m.Status, m.CarrierRef)
		}
		if got := leader(); got != earlyID {
			t.Errorf("conversation led by %d, want %d", got, earlyID)
		}
		total, n, err := st.LedgerTotal(ctx, acct)
		noErr(t, err)
		if n != 2 || total != 2*7900 {
			t.Errorf("ledger: %d charges totalling %d, want 2 totalling %d", n, total, 2*7900)
		}
	})
}
