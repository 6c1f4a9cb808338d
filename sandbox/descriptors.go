package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// What turnlog's descriptors must hold at once. Commands run as other processes,
// with descriptors of their own; what each costs turnlog is its pipes, its
// staging directory's and its workspace's descriptors, its process's, and behind
// the proxy its listener and the connections the proxy serves (two each: the
// command's and the one out).
const (
	// MaxCommands caps the sandboxed commands turnlog runs at once; more wait for
	// one to end.
	MaxCommands = 64
	// commandDescriptors is what one running command holds of turnlog's, besides
	// its proxied connections.
	commandDescriptors = 12
	// storeReserve is what turnlog keeps for itself whatever its commands do: the
	// store's connections and files, logs, listeners.
	storeReserve = 256
)

// commandSlots is one token per command running.
var commandSlots = make(chan struct{}, MaxCommands)

// DescriptorsNeeded is what turnlog may hold at once with httpConns connections
// of its HTTP server open.
func DescriptorsNeeded(httpConns int) int {
	return storeReserve + httpConns + MaxCommands*commandDescriptors + ProxyTotal*2
}

// CheckDescriptors says why this process's descriptor limit (RLIMIT_NOFILE, which
// Go raised to its hard limit at start) cannot hold what turnlog may need at once —
// httpConns connections of its HTTP server, MaxCommands commands and what their
// proxies serve (ProxyTotal), and a reserve for the store — or nil: past its limit,
// a process fails every accept and open, for everyone.
func CheckDescriptors(httpConns int) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	need := DescriptorsNeeded(httpConns)
	if lim.Cur < uint64(need) {
		return fmt.Errorf("the descriptor limit is %d and turnlog may need %d at once: %d for the store, %d for HTTP connections, %d for %d sandboxed commands and %d for what their proxies serve (%d connections); raise it (ulimit -n, LimitNOFILE= in a systemd unit)",
			lim.Cur, need, storeReserve, httpConns, MaxCommands*commandDescriptors, MaxCommands, ProxyTotal*2, ProxyTotal)
	}
	return nil
}

// HTTPConnsThatFit is how many HTTP connections this process's descriptor limit
// leaves room for beside the rest of what turnlog may need (0: none).
func HTTPConnsThatFit() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	left := int64(lim.Cur) - int64(DescriptorsNeeded(0))
	if left < 0 {
		return 0
	}
	return int(min(left, 1<<30))
}
