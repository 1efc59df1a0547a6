package main

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
)

// buildVersion is what the binary says about itself: the module version
// ("(devel)" for a build from a checkout), the commit it was built from and
// whether the work tree had changes, both empty when the build recorded no
// version control (go build -buildvcs=false, or no .git in a container build).
type buildVersion struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
}

func readBuildVersion() buildVersion {
	v := buildVersion{Version: "(unknown)", Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Version = info.Main.Version
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func cmdVersion(ctx context.Context, c *cli, args []string) error {
	if err := c.parseFlags("version", args, func(*flag.FlagSet) {}); err != nil {
		return err
	}
	v := readBuildVersion()
	commit := v.Commit
	switch {
	case commit == "":
		commit = "unknown (built without version control information)"
	case v.Modified:
		commit += " (modified: built from a work tree with uncommitted changes)"
	}
	c.print(v, fmt.Sprintf("switchboard %s\ncommit %s\n%s", v.Version, commit, v.Go))
	return nil
}
