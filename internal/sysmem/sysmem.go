// Package sysmem finds how much memory this process may use: the container's
// limit when it runs under one (cgroup v2 memory.max, or cgroup v1
// memory.limit_in_bytes), otherwise the machine's memory (MemTotal in
// /proc/meminfo). serve derives Go's soft memory limit from it.
package sysmem

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Available returns the memory this process may use in bytes, and where the
// figure came from ("cgroup v2", "cgroup v1", "meminfo"); 0 and "" when
// nothing says (not Linux, or /proc and /sys unreadable). root is "/" except
// in tests.
func Available(root string) (int64, string) {
	total := memTotal(root)
	if limit, src := cgroupLimit(root); limit > 0 && (total == 0 || limit < total) {
		return limit, src
	}
	if total > 0 {
		return total, "meminfo"
	}
	return 0, ""
}

// cgroupLimit reads the memory limit of this process's cgroup. An unlimited
// cgroup ("max" in v2, a huge number in v1) is no limit.
func cgroupLimit(root string) (int64, string) {
	// cgroup v2: the unified hierarchy; /proc/self/cgroup says "0::/path".
	if path, ok := ownCgroup(root, func(fields []string) bool { return fields[0] == "0" && fields[1] == "" }); ok {
		for dir := path; ; dir = filepath.Dir(dir) {
			if n := readLimit(filepath.Join(root, "sys/fs/cgroup", dir, "memory.max")); n > 0 {
				return n, "cgroup v2"
			}
			if dir == "/" || dir == "." {
				break
			}
		}
	}
	// cgroup v1: the memory controller's own hierarchy.
	if path, ok := ownCgroup(root, func(fields []string) bool {
		for _, c := range strings.Split(fields[1], ",") {
			if c == "memory" {
				return true
			}
		}
		return false
	}); ok {
		for _, p := range []string{filepath.Join("sys/fs/cgroup/memory", path), "sys/fs/cgroup/memory"} {
			if n := readLimit(filepath.Join(root, p, "memory.limit_in_bytes")); n > 0 {
				return n, "cgroup v1"
			}
		}
	}
	return 0, ""
}

// ownCgroup finds the line of /proc/self/cgroup that match accepts and
// returns its path.
func ownCgroup(root string, match func(fields []string) bool) (string, bool) {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.SplitN(line, ":", 3)
		if len(fields) == 3 && match(fields) {
			return fields[2], true
		}
	}
	return "", false
}

// unlimitedV1 is above any real machine's memory: cgroup v1 reports "no
// limit" as a page-rounded maximum int64.
const unlimitedV1 = 1 << 62

func readLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= unlimitedV1 {
		return 0
	}
	return n
}

func memTotal(root string) int64 {
	f, err := os.Open(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("MemTotal:")); ok {
			fields := strings.Fields(string(v))
			if len(fields) == 2 && fields[1] == "kB" {
				if n, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
					return n << 10
				}
			}
		}
	}
	return 0
}
