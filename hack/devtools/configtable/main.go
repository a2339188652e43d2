// Command configtable keeps valkeyconf's table of configuration keys equal to the real
// servers of every supported Valkey version.
//
//	configtable measure -servers FILE -out DIR   measure each server of FILE (the JSON of
//	                                             `localkube valkey-servers`) into
//	                                             DIR/valkey-<version>.json (make config-table)
//	configtable measure -server valkey-server -out DIR
//	                                             measure one server found in PATH
//	configtable render -in DIR -out FILE         write the Go table from the data files
//	                                             (make generate)
//
// Measuring runs each server many times (see measure.go), about half a minute per
// version, so `make generate` only renders the checked-in data; the test of this
// package measures the server on PATH and compares it with its data file.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "configtable:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: configtable measure|render [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ExitOnError)
	servers := fs.String("servers", "", "JSON list of servers to measure (localkube valkey-servers)")
	server := fs.String("server", "", "one valkey-server binary to measure")
	in := fs.String("in", "", "folder of data files (render)")
	out := fs.String("out", "", "folder of data files (measure), Go file (render)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("%s: -out is required", args[0])
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	switch args[0] {
	case "measure":
		return measureAll(ctx, *servers, *server, *out)
	case "render":
		return renderFile(*in, *out)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// stagedServer is one entry of `localkube valkey-servers`.
type stagedServer struct {
	Version string   `json:"version"`
	Package string   `json:"package"`
	Command []string `json:"command"`
}

func measureAll(ctx context.Context, serversFile, server, out string) error {
	var list []stagedServer
	switch {
	case serversFile != "":
		raw, err := os.ReadFile(serversFile)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("read %s: %w", serversFile, err)
		}
	case server != "":
		path, err := exec.LookPath(server)
		if err != nil {
			return err
		}
		list = []stagedServer{{Command: []string{path}}}
	default:
		return fmt.Errorf("measure: -servers or -server is required")
	}
	work, err := os.MkdirTemp("", "configtable-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// Every server's keys first: each server is then asked about the keys the others
	// list (and those of the data files already in out, when measuring one server).
	var all []string
	if server != "" {
		all = dataKeys(out)
	}
	lists := make([]listed, len(list))
	for i, s := range list {
		if len(s.Command) == 0 {
			return fmt.Errorf("measure: server %s has no command", s.Version)
		}
		if lists[i], err = listKeys(ctx, serverCmd(s.Command), work); err != nil {
			return err
		}
		if s.Version != "" && s.Version != lists[i].version {
			return fmt.Errorf("measure: the server of %s says it is %s", s.Version, lists[i].version)
		}
		all = append(all, keyNames(lists[i].defaults)...)
	}
	for i, s := range list {
		m, err := measure(ctx, serverCmd(s.Command), work, lists[i], all)
		if err != nil {
			return err
		}
		m.Package = s.Package
		if err := writeServer(out, m); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "configtable: Valkey %s: %d keys\n", m.Version, len(m.Keys))
	}
	return nil
}

// dataKeys returns the keys of every data file in dir.
func dataKeys(dir string) []string {
	var all []string
	if old, err := readServers(dir); err == nil {
		for _, s := range old {
			all = append(all, keyNames(s.Keys)...)
		}
	}
	return all
}

// keyNames returns the keys of m.
func keyNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
