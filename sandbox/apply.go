package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// applyLayers applies what the command wrote (the overlay's upper layer) to its
// workspace, in the helper once every process of the command is dead: under the
// workspace's lock it takes back what applies of dead processes left unfinished,
// reads both snapshots, plans (makePlan), writes the plan's journal to the staging
// directory, carries the plan out, syncs the workspace's file system once and marks
// the journal complete. An error after the first step takes back what was done:
// the workspace is as before, and the report says why.
func applyLayers(l *layers, spec Spec) (helperReport, error) {
	start := time.Now()
	defer runtime.KeepAlive(l) // its descriptors are used by number below
	var rep helperReport
	if l.workspace == nil || l.staging == nil {
		return rep, failed(&rep, fmt.Errorf("no workspace and staging directory were handed down"))
	}
	wsfd, upfd := int(l.workspace.Fd()), int(l.upper.Fd())
	if err := unix.Flock(wsfd, unix.LOCK_EX); err != nil {
		return rep, fmt.Errorf("lock the workspace: %w", err)
	}
	defer unix.Flock(wsfd, unix.LOCK_UN)
	if did, err := recoverApplies(wsfd, nil); err != nil {
		return rep, fmt.Errorf("an earlier apply left the workspace unfinished and it could not be taken back: %w", err)
	} else {
		for _, d := range did {
			fmt.Fprintf(os.Stderr, "turnlog: %s\n", d)
		}
	}
	// A command that ran out of its write layer wrote what it wrote only in part (a
	// file cut short, a tree half made): none of it lands.
	var fs unix.Statfs_t
	if err := unix.Fstatfs(upfd, &fs); err != nil {
		return rep, failed(&rep, err)
	}
	if fs.Bfree == 0 || fs.Ffree == 0 {
		return rep, failed(&rep, fmt.Errorf("the command reached its write quota (%d bytes, %d entries) and what it wrote may be incomplete", spec.WriteBytes, spec.WriteEntries))
	}
	up, err := readUpper(upfd)
	if err != nil {
		return rep, failed(&rep, err)
	}
	if len(up.children) == 0 {
		return rep, nil
	}
	ws, err := readWorkspace(wsfd, up)
	if err != nil {
		return rep, failed(&rep, err)
	}
	p, err := makePlan(up, ws, rulesOf(spec))
	if err != nil {
		return rep, failed(&rep, err)
	}
	if p.grows() && (spec.WorkspaceBytes > 0 || spec.WorkspaceEntries > 0) {
		bytes, entries, err := workspaceUsage(wsfd)
		if err == nil {
			err = checkWorkspaceCaps(p, bytes, entries, int64(spec.WorkspaceBytes), int64(spec.WorkspaceEntries))
		}
		if err != nil {
			return rep, failed(&rep, err)
		}
	}
	rep.Changes = Changes{Paths: p.changed, Count: p.count, Refused: p.refused, RefusedCount: p.refusedCount, Modes: p.modes, ModesCount: p.modesCount}
	if len(p.ops) == 0 {
		return rep, nil
	}
	stage := int(l.staging.Fd())
	j, err := writeJournal(stage, journalHeader{ID: l.stagingID, Tag: spec.ApplyTag}, p.ops)
	if err != nil {
		return rep, failed(&rep, err)
	}
	defer j.Close()
	prog, err := openProgress(stage)
	if err != nil {
		unix.Unlinkat(stage, journalName, 0) // no step ran
		return rep, failed(&rep, err)
	}
	defer prog.Close()
	x := &executor{id: l.stagingID, ws: dirChain{root: wsfd}, upper: dirChain{root: upfd}, stage: stage, progress: prog, afterOp: l.afterOp}
	mask := unix.Umask(0) // entries are made with the plan's modes as they are
	err = x.run(p.ops)
	unix.Umask(mask)
	x.ws.close()
	x.upper.close()
	if err == nil {
		if err = unix.Syncfs(wsfd); err == nil {
			err = markComplete(j)
		}
	}
	if err != nil {
		conflicts, rerr := rollback(wsfd, stage, l.stagingID, p.ops)
		switch {
		case rerr != nil:
			err = fmt.Errorf("%w; taking back what was applied failed too (turnlog tries again): %v", err, rerr)
		case len(conflicts) > 0:
			err = fmt.Errorf("%w; what was applied was taken back but for %d paths changed since (turnlog keeps what it replaced there)", err, len(conflicts))
		default:
			unix.Unlinkat(stage, journalName, 0) // taken back: nothing is left to recover
		}
		return rep, failed(&rep, err)
	}
	for _, o := range p.ops {
		if o.Kind == opRemove || o.OldIno != 0 && (o.Kind == opPut || o.Kind == opSymlink) {
			rep.Moved++
		}
	}
	rep.ApplyNanos = time.Since(start).Nanoseconds()
	return rep, nil
}

// failed makes rep say that nothing was applied, and why.
func failed(rep *helperReport, err error) error {
	rep.Changes = Changes{Failed: "nothing was applied: " + err.Error()}
	return err
}

// rulesOf are the rules a spec's apply is planned by.
func rulesOf(spec Spec) planRules {
	return planRules{gitWritable: spec.GitWritable, since: unix.Timespec{Sec: spec.CommandStart[0], Nsec: spec.CommandStart[1]},
		writeBytes: int64(spec.WriteBytes), writeEntries: int64(spec.WriteEntries)}
}
