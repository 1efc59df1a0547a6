// Package kanneltest runs a real Kannel stack (bearerbox, smsbox and the
// fakesmsc test SMSC from Debian's kannel and kannel-extras packages) for
// tests and benchmarks.
//
// The stack has two fake SMSC connections:
//
//   - "mt" carries every outbound (MT) message. A long-running fakesmsc
//     (-m 0: it sends nothing and blocks on reading) is connected to it and
//     prints each message it receives; the stack parses those lines (see
//     [MT], [Stack.WaitMT]). The fake SMSC answers every message with an
//     "smsc submit" DLR (type 8) and, when 1 or 2 is in the dlr-mask, a
//     "delivered" DLR (type 1); it can produce no failure reports.
//   - "mo" injects inbound (MO) messages ([Stack.InjectMO]). It has
//     allowed-smsc-id = mo so no MT is ever routed to it. fakesmsc takes
//     messages only on its command line (its stdin "interactive mode"
//     buffers lines behind select and crashed with a double free in
//     1.4.5), and the fake SMSC serves one client at a time, so each
//     injection runs a one-shot fakesmsc (-m 1), waits until bearerbox's
//     status counts the message as received on "mo", then kills it.
//
// Neither connection sets throughput, so Kannel does not pace messages, and
// the MT fakesmsc never sends, so its -i interval does not apply.
//
// All listeners bind to 127.0.0.1 on free ports chosen at start. Each
// process runs in its own process group, which Close terminates (SIGTERM,
// then SIGKILL after a grace period).
package kanneltest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf16"
)

// Paths of the Kannel binaries, as installed by Debian 12's kannel (boxes)
// and kannel-extras (fakesmsc) packages.
var (
	BearerboxPath = "/usr/sbin/bearerbox"
	SMSBoxPath    = "/usr/sbin/smsbox"
	FakeSMSCPath  = "/usr/lib/kannel/test/fakesmsc"
)

// The smsc-ids of the stack's two fake SMSC connections.
const (
	MTSMSC = "mt"
	MOSMSC = "mo"
)

const (
	pollInterval  = 20 * time.Millisecond
	readyTimeout  = 20 * time.Second
	stopGrace     = 3 * time.Second
	startAttempts = 3
)

// Config tunes a stack. The zero value is a working stack.
type Config struct {
	// Extra is appended verbatim to kannel.conf, e.g. the sms-service group
	// from kannel.SMSService.
	Extra string
	// LogLevel is bearerbox's and smsbox's log-file level: 0 debug,
	// 1 info, 2 warning, 3 error, 4 panic.
	LogLevel int
}

// Stack is a running Kannel. Its exported fields describe how to reach it.
type Stack struct {
	// Dir holds kannel.conf and every log file.
	Dir string
	// SendURL is smsbox's sendsms endpoint.
	SendURL string
	// Username and Password are the sendsms-user's credentials.
	Username, Password string
	// AdminURL is bearerbox's HTTP administration base URL; AdminPassword
	// its admin-password.
	AdminURL, AdminPassword string

	moPort int
	procs  []*proc // bearerbox, smsbox, MT fakesmsc, in start order

	mu      sync.Mutex
	mts     []MT
	changed chan struct{} // closed and replaced whenever mts grows

	moMu sync.Mutex // one injection at a time: the fake SMSC takes one client

	closeOnce sync.Once
}

// MT is one message as the fake SMSC handed it to fakesmsc.
type MT struct {
	From, To string
	// Type is fakesmsc's word: "text" (7-bit, shown as Kannel's internal
	// UTF-8), "ucs-2", "data" (8-bit) or "udh" (a part of a concatenated
	// message).
	Type string
	// Text is the message: as is for "text", decoded from UTF-16BE for
	// "ucs-2", the raw bytes for "data" and the data part for "udh".
	Text string
	// UDH is the user data header of a "udh" message.
	UDH []byte
	// Raw is the line fakesmsc printed, continuation lines joined by "\n".
	Raw string
}

// Binaries reports which Kannel binaries are missing, if any.
func Binaries() error {
	var missing []string
	for _, p := range []string{BearerboxPath, SMSBoxPath, FakeSMSCPath} {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("kannel binaries not installed: %s (Debian packages kannel and kannel-extras)", strings.Join(missing, ", "))
	}
	return nil
}

// StartStack writes kannel.conf into dir, starts bearerbox, smsbox and the
// MT fakesmsc, and returns once all three are connected. The caller must
// Close the stack.
func StartStack(dir string, cfg Config) (*Stack, error) {
	if err := Binaries(); err != nil {
		return nil, err
	}
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		var s *Stack
		s, err = startOnce(filepath.Join(dir, "run"+strconv.Itoa(attempt)), cfg)
		if err == nil {
			return s, nil
		}
		// A port picked as free may have been taken before Kannel bound
		// it; a fresh set of ports usually fixes that.
	}
	return nil, err
}

func startOnce(dir string, cfg Config) (*Stack, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	adminPort, boxPort, sendPort, mtPort, moPort := ports[0], ports[1], ports[2], ports[3], ports[4]
	s := &Stack{
		Dir:           dir,
		SendURL:       fmt.Sprintf("http://127.0.0.1:%d/cgi-bin/sendsms", sendPort),
		Username:      "switchboard",
		Password:      randomToken(),
		AdminURL:      fmt.Sprintf("http://127.0.0.1:%d", adminPort),
		AdminPassword: randomToken(),
		moPort:        moPort,
		changed:       make(chan struct{}),
	}
	conf := fmt.Sprintf(confTemplate,
		adminPort, s.AdminPassword, boxPort, filepath.Join(dir, "bearerbox.log"), cfg.LogLevel,
		MTSMSC, mtPort,
		MOSMSC, moPort, MOSMSC,
		boxPort, sendPort, filepath.Join(dir, "smsbox.log"), cfg.LogLevel,
		s.Username, s.Password,
	) + cfg.Extra
	confPath := filepath.Join(dir, "kannel.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	fail := func(err error) (*Stack, error) {
		s.Close()
		return nil, fmt.Errorf("kanneltest: %w\n%s", err, s.LogTails())
	}

	bb, err := s.start("bearerbox", BearerboxPath, "-v", "4", confPath)
	if err != nil {
		return fail(err)
	}
	if err := s.await(ctx, bb, "bearerbox admin interface", func(st *status) bool { return true }); err != nil {
		return fail(err)
	}
	sb, err := s.start("smsbox", SMSBoxPath, "-v", "4", confPath)
	if err != nil {
		return fail(err)
	}
	if err := s.await(ctx, sb, "smsbox connection", func(st *status) bool {
		for _, b := range st.Boxes {
			if b.Type == "smsbox" && strings.HasPrefix(b.Status, "on-line") {
				return true
			}
		}
		return false
	}); err != nil {
		return fail(err)
	}
	if err := s.awaitFunc(ctx, sb, "smsbox sendsms port", func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", sendPort), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}); err != nil {
		return fail(err)
	}
	mt, err := s.startMTReader(mtPort)
	if err != nil {
		return fail(err)
	}
	if err := s.await(ctx, mt, "fakesmsc on "+MTSMSC, func(st *status) bool {
		c, ok := st.smsc(MTSMSC)
		return ok && strings.HasPrefix(c.Status, "online")
	}); err != nil {
		return fail(err)
	}
	return s, nil
}

// confTemplate is the stack's kannel.conf. Listeners bind to loopback;
// dlr-storage is required for delivery reports; http-request-retry makes
// smsbox retry a dlr-url or get-url that answered other than 200/202, as
// production must; the sendsms-user splits long texts instead of
// truncating them.
const confTemplate = `group = core
admin-port = %d
admin-interface = 127.0.0.1
admin-password = "%s"
admin-allow-ip = "127.0.0.1"
smsbox-port = %d
smsbox-interface = 127.0.0.1
box-allow-ip = "127.0.0.1"
log-file = "%s"
log-level = %d
dlr-storage = internal

group = smsc
smsc = fake
smsc-id = %s
port = %d
our-host = 127.0.0.1
connect-allow-ip = "127.0.0.1"

group = smsc
smsc = fake
smsc-id = %s
port = %d
our-host = 127.0.0.1
connect-allow-ip = "127.0.0.1"
allowed-smsc-id = %s

group = smsbox
bearerbox-host = 127.0.0.1
bearerbox-port = %d
sendsms-port = %d
sendsms-interface = 127.0.0.1
log-file = "%s"
log-level = %d
http-request-retry = 5
http-queue-delay = 1

group = sendsms-user
username = %s
password = "%s"
max-messages = 255
concatenation = true

`

// proc is one started process, in its own process group.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, valid after done
}

// start starts a long-running process of the stack, logging to name.out.
func (s *Stack) start(name, path string, args ...string) (*proc, error) {
	out, err := os.OpenFile(filepath.Join(s.Dir, name+".out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child holds its own copy
	p, err := s.startWith(name, path, out, args...)
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, p)
	return p, nil
}

// startWith starts a process in its own process group with its output
// going to out. The caller decides whether the stack owns it.
func (s *Stack) startWith(name, path string, out io.Writer, args ...string) (*proc, error) {
	cmd := exec.Command(path, args...)
	cmd.Dir = s.Dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop terminates p's process group and waits for p to exit.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Anything the leader left behind in its group goes too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// startMTReader starts the long-running fakesmsc on the MT connection and
// parses what it prints.
func (s *Stack) startMTReader(port int) (*proc, error) {
	logFile, err := os.OpenFile(filepath.Join(s.Dir, "fakesmsc-mt.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	// -m 0: send no MO, just print what arrives. The message argument is
	// required by fakesmsc's usage but never sent.
	p, err := s.startWith("fakesmsc-mt", FakeSMSCPath, pw,
		"-H", "127.0.0.1", "-r", strconv.Itoa(port), "-i", "0", "-m", "0", "0 0 text unused")
	pw.Close()
	if err != nil {
		pr.Close()
		logFile.Close()
		return nil, err
	}
	s.procs = append(s.procs, p)
	go func() {
		defer pr.Close()
		defer logFile.Close()
		s.readMTs(io.TeeReader(pr, logFile))
	}()
	return p, nil
}

// gotMessage matches fakesmsc's log line for a received message.
var gotMessage = regexp.MustCompile(`Got message \d+: <(.*)>$`)

func (s *Stack) readMTs(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := gotMessage.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		s.addMTLine(m[1])
	}
}

// addMTLine records one line fakesmsc received. The fake SMSC writes 7-bit
// text as is, so a text with a newline reaches fakesmsc as several lines;
// a line that does not start with "<from> <to> <type> " continues the
// previous text message.
func (s *Stack) addMTLine(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mt, ok := parseMT(line)
	if !ok {
		if n := len(s.mts); n > 0 && s.mts[n-1].Type == "text" {
			s.mts[n-1].Text += "\n" + line
			s.mts[n-1].Raw += "\n" + line
			s.notifyLocked()
		}
		return
	}
	s.mts = append(s.mts, mt)
	s.notifyLocked()
}

func (s *Stack) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// parseMT parses one fakesmsc line: "<from> <to> <type> <payload>".
func parseMT(line string) (MT, bool) {
	parts := strings.SplitN(line, " ", 4)
	if len(parts) < 4 {
		return MT{}, false
	}
	mt := MT{From: parts[0], To: parts[1], Type: parts[2], Raw: line}
	payload := parts[3]
	switch mt.Type {
	case "text":
		mt.Text = payload
	case "ucs-2":
		b, err := url.QueryUnescape(payload)
		if err != nil {
			return MT{}, false
		}
		mt.Text = decodeUTF16BE([]byte(b))
	case "data":
		b, err := url.QueryUnescape(payload)
		if err != nil {
			return MT{}, false
		}
		mt.Text = b
	case "udh":
		// "<udh> data <data>"
		f := strings.SplitN(payload, " ", 3)
		if len(f) != 3 || f[1] != "data" {
			return MT{}, false
		}
		udh, err1 := url.QueryUnescape(f[0])
		data, err2 := url.QueryUnescape(f[2])
		if err1 != nil || err2 != nil {
			return MT{}, false
		}
		mt.UDH, mt.Text = []byte(udh), data
	default:
		return MT{}, false
	}
	return mt, true
}

func decodeUTF16BE(b []byte) string {
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	return string(utf16.Decode(u))
}

// MTs returns every message the fake SMSC has delivered so far, in order.
func (s *Stack) MTs() []MT {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]MT(nil), s.mts...)
}

// MTCount is len(MTs()) without the copy.
func (s *Stack) MTCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mts)
}

// WaitMT returns the first delivered message for which match is true,
// waiting for it until ctx is done.
func (s *Stack) WaitMT(ctx context.Context, match func(MT) bool) (MT, error) {
	seen := 0
	for {
		s.mu.Lock()
		for ; seen < len(s.mts); seen++ {
			if match(s.mts[seen]) {
				mt := s.mts[seen]
				s.mu.Unlock()
				return mt, nil
			}
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
			// A continuation line may have completed an earlier message.
			seen = 0
		case <-ctx.Done():
			return MT{}, fmt.Errorf("kanneltest: no matching MT among %d received: %w", s.MTCount(), ctx.Err())
		}
	}
}

// InjectMO makes the fake SMSC deliver an inbound text from → to, as a
// handset would: ASCII text goes as a 7-bit "text" message, anything else
// (including a newline) as UCS-2. It returns once bearerbox has received
// the message (or fails after 20 s); what smsbox then does with it is up
// to its sms-service.
func (s *Stack) InjectMO(ctx context.Context, from, to, text string) error {
	if !isNumber(from) || !isNumber(to) {
		return errors.New("kanneltest: from and to must be non-empty and without spaces")
	}
	line := from + " " + to + " text " + text
	if !isPrintableASCII(text) {
		var b []byte
		for _, u := range utf16.Encode([]rune(text)) {
			b = append(b, byte(u>>8), byte(u))
		}
		line = from + " " + to + " ucs2 " + url.QueryEscape(string(b))
	}

	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	s.moMu.Lock()
	defer s.moMu.Unlock()
	before, err := s.moReceived(ctx)
	if err != nil {
		return err
	}
	out, err := os.OpenFile(filepath.Join(s.Dir, "fakesmsc-mo.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	p, err := s.startWith("fakesmsc-mo", FakeSMSCPath, out,
		"-H", "127.0.0.1", "-r", strconv.Itoa(s.moPort), "-i", "0", "-m", "1", line)
	if err != nil {
		return err
	}
	// fakesmsc -m 1 never exits by itself: it waits for more input.
	defer p.stop()
	return s.awaitFunc(ctx, p, "bearerbox to receive the MO", func() bool {
		n, err := s.moReceived(ctx)
		return err == nil && n > before
	})
}

func (s *Stack) moReceived(ctx context.Context) (int, error) {
	st, err := s.status(ctx)
	if err != nil {
		return 0, err
	}
	c, ok := st.smsc(MOSMSC)
	if !ok {
		return 0, errors.New("kanneltest: bearerbox status lists no " + MOSMSC + " connection")
	}
	return c.SMS.Received, nil
}

func isNumber(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\r\n")
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// status is the part of bearerbox's status.xml the stack reads.
type status struct {
	Boxes []struct {
		Type   string `xml:"type"`
		Status string `xml:"status"`
	} `xml:"boxes>box"`
	SMSCs []smscStatus `xml:"smscs>smsc"`
}

type smscStatus struct {
	ID     string `xml:"id"`
	Status string `xml:"status"`
	SMS    struct {
		Received int `xml:"received"`
		Sent     int `xml:"sent"`
	} `xml:"sms"`
}

func (st *status) smsc(id string) (smscStatus, bool) {
	for _, c := range st.SMSCs {
		if c.ID == id {
			return c, true
		}
	}
	return smscStatus{}, false
}

var statusClient = &http.Client{Timeout: 2 * time.Second}

func (s *Stack) status(ctx context.Context) (*status, error) {
	u := s.AdminURL + "/status.xml?password=" + url.QueryEscape(s.AdminPassword)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := statusClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("bearerbox status: HTTP %d", resp.StatusCode)
	}
	var st status
	// status.xml has no encoding issues worth a charset reader; its
	// version block is free text.
	if err := xml.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st); err != nil {
		return nil, fmt.Errorf("bearerbox status: %w", err)
	}
	return &st, nil
}

// await polls bearerbox's status until ready says yes.
func (s *Stack) await(ctx context.Context, p *proc, what string, ready func(*status) bool) error {
	return s.awaitFunc(ctx, p, what, func() bool {
		st, err := s.status(ctx)
		return err == nil && ready(st)
	})
}

// awaitFunc polls ready until it says yes, failing early if p or any
// long-running process of the stack exits.
func (s *Stack) awaitFunc(ctx context.Context, p *proc, what string, ready func() bool) error {
	watch := append([]*proc{p}, s.procs...)
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		if ready() {
			return nil
		}
		for _, q := range watch {
			select {
			case <-q.done:
				return fmt.Errorf("waiting for %s: %s exited: %v", what, q.name, q.err)
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

// Close stops every process of the stack and waits for them to exit. It is
// safe to call more than once.
func (s *Stack) Close() {
	s.closeOnce.Do(func() {
		var wg sync.WaitGroup
		for _, p := range s.procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.stop()
			}()
		}
		wg.Wait()
	})
}

// LogTails returns the last lines of every log file, for failure reports.
func (s *Stack) LogTails() string {
	var b strings.Builder
	for _, name := range []string{"bearerbox.out", "bearerbox.log", "smsbox.out", "smsbox.log", "fakesmsc-mt.out", "fakesmsc-mo.out"} {
		data, err := os.ReadFile(filepath.Join(s.Dir, name))
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", name, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
