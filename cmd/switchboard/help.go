package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The help is built from the flags the commands define (each command run
// with cli.describe set stops at its parse and hands over its flag set), so
// a new flag cannot be left out of it.

// flagGroup is a set of flags several commands share: a command's help shows
// it under its title when the command defines all of its flags.
type flagGroup struct {
	title  string
	define func(c *cli, fs *flag.FlagSet)
}

var flagGroups = []flagGroup{
	{"Database flags", (*cli).databaseFlags},
	{"Output flags", (*cli).outputFlags},
	{"Logging flags", (*cli).logFlags},
	{"Server flags", (*cli).serverFlags},
}

// names lists g's flag names, sorted.
func (g flagGroup) names() []string {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	g.define(&cli{}, fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// described is a command's flags and positional arguments, as its parse
// reports them in describe mode.
type described struct {
	fs         *flag.FlagSet
	positional []string
}

// describe runs cmd only to collect its flags and positional arguments; ok
// is false when the command returned without reaching its parse.
func describe(cmd *command) (d described, ok bool) {
	c := &cli{stdout: io.Discard, stderr: io.Discard, describe: func(fs *flag.FlagSet, positional []string) {
		d, ok = described{fs, positional}, true
	}}
	cmd.run(context.Background(), c, nil)
	c.close()
	return d, ok
}

// grouped splits fs's flags into the command's own (sorted by name) and the
// flagGroups it defines whole (their indexes).
func grouped(fs *flag.FlagSet) (own []*flag.Flag, groups []int) {
	taken := map[string]bool{}
	for i, g := range flagGroups {
		names := g.names()
		if slices.ContainsFunc(names, func(n string) bool { return fs.Lookup(n) == nil }) {
			continue
		}
		groups = append(groups, i)
		for _, n := range names {
			taken[n] = true
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !taken[f.Name] {
			own = append(own, f)
		}
	})
	return own, groups
}

// required reports whether f's usage says it must be given.
func required(f *flag.Flag) bool { return strings.Contains(f.Usage, "(required)") }

// placeholders are the value names the usage line shows, by flag type.
var placeholders = map[string]string{"int": "N", "uint": "N", "float": "X", "string": "TEXT", "duration": "DURATION", "value": "VALUE"}

// synopsis is a command line for the command: its required flags with a
// value placeholder, [flags] when it has others, and its positional arguments.
func synopsis(name string, fs *flag.FlagSet, positional []string) string {
	parts := []string{"switchboard", name}
	fs.VisitAll(func(f *flag.Flag) {
		if required(f) {
			typ, _ := flag.UnquoteUsage(f)
			parts = append(parts, "--"+f.Name, placeholders[typ])
		}
	})
	parts = append(parts, "[flags]")
	return strings.Join(append(parts, positional...), " ")
}

// commandHelp writes one command's help: its usage line, summary, own flags
// and each group of shared flags it reads.
func commandHelp(w io.Writer, name, summary string, fs *flag.FlagSet, positional []string) {
	fmt.Fprintf(w, "usage: %s\n\n", synopsis(name, fs, positional))
	if summary != "" {
		fmt.Fprintf(w, "%s\n", summary)
	}
	own, groups := grouped(fs)
	if len(own) > 0 {
		fmt.Fprintf(w, "\nFlags:\n")
		printFlags(w, own)
	}
	for _, i := range groups {
		fmt.Fprintf(w, "\n%s:\n", flagGroups[i].title)
		var flags []*flag.Flag
		for _, n := range flagGroups[i].names() {
			flags = append(flags, fs.Lookup(n))
		}
		printFlags(w, flags)
	}
}

// printFlags writes flags as flag.PrintDefaults does, with two dashes.
// A default that may be a secret (set from the environment) is not shown.
func printFlags(w io.Writer, flags []*flag.Flag) {
	for _, f := range flags {
		typ, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s", f.Name)
		if typ != "" {
			fmt.Fprintf(w, " %s", typ)
		}
		fmt.Fprintf(w, "\n    \t%s", strings.ReplaceAll(usage, "\n", "\n    \t"))
		secret := strings.Contains(f.Name, "password") || strings.Contains(f.Name, "secret")
		switch {
		case secret, f.DefValue == "", f.DefValue == "0", f.DefValue == "false", f.DefValue == "0s":
		case typ == "string":
			fmt.Fprintf(w, " (default %q)", f.DefValue)
		default:
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	}
}

// usage writes the top-level help: every command with its summary and its
// own flags, then every shared group of flags with the commands that read it.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: switchboard <command> [flags]")
	fmt.Fprintln(w, "       switchboard <command> --help   one command's usage and flags in full")
	fmt.Fprintln(w, "       switchboard version            version, commit and Go version (also --version)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands (the flags in brackets are optional):")
	readers := make([][]string, len(flagGroups))
	for i := range commands {
		cmd := &commands[i]
		fmt.Fprintf(w, "  %-22s %s\n", cmd.name, cmd.summary)
		d, ok := describe(cmd)
		if !ok {
			continue
		}
		own, groups := grouped(d.fs)
		var flags, optional []string
		for _, f := range own {
			if required(f) {
				flags = append(flags, "--"+f.Name)
			} else {
				optional = append(optional, "[--"+f.Name+"]")
			}
		}
		flags = append(flags, optional...)
		flags = append(flags, d.positional...)
		for _, g := range groups {
			readers[g] = append(readers[g], cmd.name)
			if g > 1 { // past the database and output flags, which nearly all read
				flags = append(flags, "+ "+strings.ToLower(flagGroups[g].title))
			}
		}
		if len(flags) > 0 {
			fmt.Fprintf(w, "  %-22s %s\n", "", strings.Join(flags, " "))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Each shared flag below is also read from its environment variable.")
	ref := &cli{}
	for i, g := range flagGroups {
		fmt.Fprintf(w, "\n%s (%s):\n", g.title, readBy(readers[i]))
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		g.define(ref, fs)
		var flags []*flag.Flag
		fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
		printFlags(w, flags)
	}
}

// readBy names the commands that read a group of flags.
func readBy(names []string) string {
	if len(names) == len(commands) {
		return "every command"
	}
	if len(names) > len(commands)/2 {
		return fmt.Sprintf("every command but %s", strings.Join(notIn(names), ", "))
	}
	return strings.Join(names, ", ")
}

// notIn lists the command names missing from names.
func notIn(names []string) []string {
	var out []string
	for _, c := range commands {
		if !slices.Contains(names, c.name) {
			out = append(out, c.name)
		}
	}
	return out
}
