package sysmem

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAvailable(t *testing.T) {
	const meminfo = "MemTotal:       24684312 kB\nMemFree:        16554080 kB\n"
	tests := []struct {
		name    string
		files   map[string]string
		want    int64
		wantSrc string
	}{
		{"machine only", map[string]string{"proc/meminfo": meminfo}, 24684312 << 10, "meminfo"},
		{"cgroup v2 limit", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/app.slice/sb.service\n",
			"sys/fs/cgroup/app.slice/sb.service/memory.max": "1073741824\n",
		}, 1 << 30, "cgroup v2"},
		{"cgroup v2 limit on a parent", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/app.slice/sb.service\n",
			"sys/fs/cgroup/app.slice/sb.service/memory.max": "max\n",
			"sys/fs/cgroup/app.slice/memory.max":            "536870912\n",
		}, 512 << 20, "cgroup v2"},
		{"cgroup v2 unlimited", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n",
		}, 24684312 << 10, "meminfo"},
		{"cgroup v1 limit", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "12:cpu,cpuacct:/\n11:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "2147483648\n",
		}, 2 << 30, "cgroup v1"},
		{"cgroup v1 unlimited", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "11:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		}, 24684312 << 10, "meminfo"},
		{"limit above the machine", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "107374182400\n",
		}, 24684312 << 10, "meminfo"},
		{"nothing readable", map[string]string{}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for name, content := range tt.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, src := Available(root)
			if got != tt.want || src != tt.wantSrc {
				t.Errorf("Available = %d %q, want %d %q", got, src, tt.want, tt.wantSrc)
			}
		})
	}
}
