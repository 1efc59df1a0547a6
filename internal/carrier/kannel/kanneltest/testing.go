package kanneltest

import (
	"os"
	"testing"
)

// RequireEnv names the environment variable that turns a missing Kannel
// from a skipped test into a failed one. CI installs Kannel and sets it
// to 1.
const RequireEnv = "SWITCHBOARD_TEST_KANNEL"

// Start starts a Kannel stack in a temporary directory and stops it when the
// test ends. Without the Kannel binaries it skips the test, unless
// SWITCHBOARD_TEST_KANNEL=1, in which case it fails it.
func Start(t testing.TB, cfg Config) *Stack {
	t.Helper()
	if err := Binaries(); err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("kanneltest: %v; %s=1 requires them", err, RequireEnv)
		}
		t.Skipf("kanneltest: %v; skipping (set %s=1 to make this a failure)", err, RequireEnv)
	}
	s, err := StartStack(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Kannel logs in %s:\n%s", s.Dir, s.LogTails())
		}
		s.Close()
	})
	return s
}
