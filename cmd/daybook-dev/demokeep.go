package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
)

// stopKept stops the moto_server an earlier `demo --keep` left running in
// dir, so a new run starts from scratch.
func stopKept(out io.Writer, dir string) error {
	d := localDir(dir)
	if pids, err := stopKeptStores(d); err != nil {
		return err
	} else if len(pids) > 0 {
		fmt.Fprintf(out, "    stopped the store emulators an earlier demo --keep left running (pids %v)\n", pids)
	}
	if _, ok := running(d); !ok {
		return nil
	}
	pid, err := readPid(d)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "    stopping the moto_server an earlier demo --keep left running (pid %d)\n", pid)
	if err := motoserver.StopPid(pid); err != nil {
		return err
	}
	_ = os.Remove(d.pidFile())
	_ = os.Remove(d.urlFile())
	return nil
}

// consoleListen is where the operator CLI's `daybook console` listens
// unless --listen.
const consoleListen = "127.0.0.1:8080"

// keepOrSay ends the demo with the web console: with Keep, moto_server stays
// up (its pid and URL written where `local down` finds them) and the command
// that opens the console on this run's ledger is printed; without it, the
// commands that keep a run for the console are. The console is the operator
// CLI's (op); the demo and local down are this program's.
func keepOrSay(out io.Writer, o demoOptions, op operatorCLI, srv *motoserver.Server, stores *demoStores) (bool, error) {
	self, env := cmp.Or(o.Self, selfCommand()), filepath.Join(o.Dir, "env.json")
	fmt.Fprintf(out, "\n==> web console\n")
	if !o.Keep {
		fmt.Fprintf(out, "    the demo stops its moto_server, and the ledger with it; to browse a run in the console, keep it running:\n")
		fmt.Fprintf(out, "      %s demo --dir %s --bin %s --keep && %s console --env-file %s\n", self, o.Dir, o.BinDir, op, env)
		fmt.Fprintf(out, "    then open http://%s/ (Ctrl-C stops the console; %s local down --dir %s stops moto_server)\n", consoleListen, self, o.Dir)
		return false, nil
	}
	d := localDir(o.Dir)
	if err := os.WriteFile(d.pidFile(), []byte(strconv.Itoa(srv.Pid)+"\n"), 0o644); err != nil {
		return false, err
	}
	if err := os.WriteFile(d.urlFile(), []byte(srv.URL+"\n"), 0o644); err != nil {
		return false, err
	}
	if err := stores.keep(d); err != nil {
		return false, err
	}
	fmt.Fprintf(out, "    moto_server keeps running at %s (pid %d) with this run's ledger and buckets; open the console on it:\n", srv.URL, srv.Pid)
	fmt.Fprintf(out, "      %s console --env-file %s\n", op, env)
	fmt.Fprintf(out, "    (fake-gcs-server and Azurite keep running too) and stop them when done: %s local down --dir %s\n", self, o.Dir)
	return true, nil
}
