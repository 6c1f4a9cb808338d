package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/projection"
)

// servedLock is the file a serve on a SQLite database holds an exclusive lock on
// while it runs, so that a command that would write the database beside it (resume)
// refuses and says to go through the server.
func servedLock(db string) string { return db + ".serve-lock" }

// lockServed takes the serve lock of a SQLite database without waiting: the release
// function, or ok false when another process holds it. A PostgreSQL database has none
// (sessions' leases keep its writers apart).
func lockServed(db string) (release func(), ok bool, err error) {
	if turnlog.IsPostgres(db) {
		return func() {}, true, nil
	}
	f, err := os.OpenFile(servedLock(db), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return func() { f.Close() }, true, nil
}

// cmdSessions lists a user's sessions of the database, newest first: id, app, status,
// committed turns and the first input.
func cmdSessions(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "sessions", &f, true)
	user := fs.String("user", envOr("TURNLOG_USER", "local"), "whose sessions (env TURNLOG_USER)")
	app := fs.String("app", "", "only this app's")
	var sf serverFlags
	sf.add(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if sf.url != "" {
		return remoteSessions(ctx, c, sf, *app)
	}
	tl, err := c.openToRead(ctx, f)
	if err != nil {
		return err
	}
	defer tl.Close()
	list, err := tl.Store.SessionPage(ctx, *user, *app, time.Time{}, "", 200)
	if err != nil {
		return err
	}
	for _, s := range list {
		st, first, err := sessionState(ctx, tl, s.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s  %-10s %-8s %3d  %s\n", s.ID, s.App, st, s.TurnCount, events.ShortenForMessage(strings.Join(strings.Fields(first), " "), 60))
	}
	return nil
}

// sessionState is a session's status (idle, running, waiting) and its first input.
func sessionState(ctx context.Context, tl *turnlog.Turnlog, id string) (string, string, error) {
	turns, err := tl.Store.Turns(ctx, id)
	if err != nil || len(turns) == 0 {
		return "idle", "", err
	}
	st := "idle"
	switch turns[len(turns)-1].Status {
	case projection.TurnSuspended:
		st = "waiting"
	case projection.TurnRunning:
		st = "running"
	}
	return st, turns[0].Input, nil
}

// cmdShow prints a session: its turns, its last answer, and what waits for a person.
func cmdShow(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "show", &f, true)
	var sf serverFlags
	sf.add(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := requireArgs(fs, 1, "one SESSION_ID"); err != nil {
		return err
	}
	if sf.url != "" {
		return remoteShow(ctx, c, sf, fs.Arg(0))
	}
	tl, err := c.openToRead(ctx, f)
	if err != nil {
		return err
	}
	defer tl.Close()
	id := fs.Arg(0)
	s, err := tl.Store.Session(ctx, id)
	if err != nil {
		return err
	}
	turns, err := tl.Store.Turns(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "session %s  app %s  owner %s  agent %s\n", s.ID, s.App, s.Owner, s.ActiveAgent)
	for _, t := range turns {
		line := fmt.Sprintf("turn %s  %-9s %s", t.ID, t.Status, events.ShortenForMessage(t.Input, 80))
		if t.ErrorCode != "" {
			line += fmt.Sprintf("  (%s: %s)", t.ErrorCode, t.ErrorMessage)
		}
		fmt.Fprintln(c.stdout, line)
	}
	if items, err := tl.Store.History(ctx, id); err == nil && len(items) > 0 {
		if last := items[len(items)-1]; last.Type == events.ItemMessage && last.Role == "assistant" {
			fmt.Fprintf(c.stdout, "answer: %s\n", last.Content)
		}
	}
	qs, err := localQuestions(ctx, tl, s.App, id)
	if err != nil {
		return err
	}
	printQuestions(c, qs)
	if len(qs) > 0 {
		return ExitSuspended
	}
	return nil
}

// question is one question a session waits on, as the terminal shows and answers it.
type question struct {
	ID, Kind, Tool, Rule, Level, Grant, Reason string
	Arguments                                  json.RawMessage
}

// localQuestions are a session's waiting questions on the database.
func localQuestions(ctx context.Context, tl *turnlog.Turnlog, app, id string) ([]question, error) {
	pending, err := tl.Store.PendingInterrupts(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]question, len(pending))
	for i, p := range pending {
		out[i] = question{ID: p.ID, Kind: p.Kind, Tool: p.Tool, Rule: p.Rule, Level: p.Level, Reason: p.Reason, Arguments: p.Arguments}
		if p.Kind == events.InterruptToolApproval && p.Rule != "" {
			out[i].Grant, _ = tl.Engine.SuggestedGrant(app, p.Path, p.Tool, p.Arguments)
		}
	}
	return out, nil
}

// printQuestions prints the questions a session waits on, each with the answers it
// takes.
func printQuestions(c *cliContext, qs []question) {
	for _, q := range qs {
		if q.Kind == events.InterruptGuardrailReview {
			fmt.Fprintf(c.stdout, "waiting: %s  review of a held response (rule %s): %s  — answer approve or reject\n", q.ID, q.Rule, q.Arguments)
			continue
		}
		if q.Kind == events.InterruptBudget {
			fmt.Fprintf(c.stdout, "waiting: %s  budget: %s  %s  — answer extend:FIELD=N,… or stop\n", q.ID, q.Reason, q.Arguments)
			continue
		}
		line := fmt.Sprintf("waiting: %s  approve %s %s", q.ID, q.Tool, q.Arguments)
		if q.Rule != "" {
			line += fmt.Sprintf("  (rule %s, %s)", q.Rule, q.Level)
		}
		if q.Grant != "" {
			line += fmt.Sprintf("  — or 'session' to allow %q for the rest of the session", q.Grant)
		}
		fmt.Fprintln(c.stdout, line)
	}
}

// cmdResume answers the questions a session's suspended turn waits on, then drives it
// on and prints how it ended (exit 5 when it waits again). Each --answer is ID=yes,
// ID=no, ID=no:MESSAGE, ID=session (yes, and for the rest of the session), for a
// review ID=approve / ID=reject, for a budget ID=extend:output_tokens=1000,cost=0.5 /
// ID=stop; --all gives one answer to every question. On a
// SQLite database a running serve holds, it refuses: answer through the server.
func cmdResume(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "resume", &f, true)
	var given multiFlag
	fs.Var(&given, "answer", "ID=yes|no|no:MESSAGE|session|approve|reject|stop|extend:FIELD=N,… (repeatable)")
	all := fs.String("all", "", "one answer to every question: yes, no, session, approve or reject")
	askFlag := fs.Bool("ask", false, "ask each question without an answer on the terminal (the default when no answer is given and stdin is a terminal)")
	by := fs.String("by", envOr("TURNLOG_USER", "local"), "who answers, as the log records it (env TURNLOG_USER; through --server, the key's user)")
	var sf serverFlags
	sf.add(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := requireArgs(fs, 1, "one SESSION_ID"); err != nil {
		return err
	}
	if *askFlag || (len(given) == 0 && *all == "" && stdinIsTerminal(c)) {
		c.asker = bufio.NewReader(c.input())
	}
	if sf.url != "" {
		return remoteResume(ctx, c, sf, fs.Arg(0), given, *all)
	}
	release, ok, err := lockServed(f.db)
	if err != nil {
		return err
	}
	if !ok {
		return events.Errorf(events.CodeConflict, "a turnlog serve holds %s: answer through it (POST /v1/sessions/{id}/turns with resume_map, or its inspector)", shownDB(f.db))
	}
	defer release()
	tl, err := c.open(ctx, f)
	if err != nil {
		return err
	}
	defer tl.Close()
	id := fs.Arg(0)
	s, err := tl.Store.Session(ctx, id)
	if err != nil {
		return err
	}
	qs, err := localQuestions(ctx, tl, s.App, id)
	if err != nil {
		return err
	}
	answers, err := answersFor(c, id, qs, given, *all)
	if err != nil {
		return err
	}
	st, err := tl.Engine.Resume(fsm.AsOperator(ctx), id, *by, answers) // on the database: an operator
	if err != nil {
		return err
	}
	res, err := st.Wait()
	if err != nil {
		return err
	}
	return report(c, res)
}

// answersFor reads resume's flags into one answer a question: each question needs one,
// and every answer must name a question.
func answersFor(c *cliContext, id string, qs []question, given []string, all string) (map[string]fsm.Answer, error) {
	if len(qs) == 0 {
		return nil, events.Errorf(events.CodeConflict, "session %s waits for no answer", id)
	}
	byID := map[string]string{}
	for _, g := range given {
		k, v, ok := strings.Cut(g, "=")
		if !ok {
			return nil, events.FieldError(events.CodeInvalid, "answer", "%q is not ID=ANSWER", g)
		}
		byID[k] = v
	}
	answers := map[string]fsm.Answer{}
	for _, q := range qs {
		v, ok := byID[q.ID]
		if !ok {
			v = all
		}
		delete(byID, q.ID)
		if v == "" && c.asker != nil {
			a, err := askFor(c, q)
			if err != nil {
				return nil, err
			}
			answers[q.ID] = a
			continue
		}
		if v == "" {
			printQuestions(c, qs)
			return nil, events.FieldError(events.CodeInvalid, "answer", "question %s has no answer (give --answer %s=…, --all or --ask)", q.ID, q.ID)
		}
		a, err := answerFrom(q, v)
		if err != nil {
			return nil, err
		}
		answers[q.ID] = a
	}
	if len(byID) > 0 {
		ids := make([]string, 0, len(byID))
		for k := range byID {
			ids = append(ids, k)
		}
		sort.Strings(ids)
		return nil, events.FieldError(events.CodeInvalid, "answer", "session %s waits on no question %s", id, strings.Join(ids, ", "))
	}
	return answers, nil
}

// askFor asks one question on the terminal until it gets an answer resume's flags
// would take (y and n for short); the end of the input is no answer at all.
func askFor(c *cliContext, q question) (fsm.Answer, error) {
	printQuestions(c, []question{q})
	prompt := "answer yes, no, no:MESSAGE or session: "
	switch q.Kind {
	case events.InterruptGuardrailReview:
		prompt = "answer approve or reject: "
	case events.InterruptBudget:
		prompt = "answer extend:FIELD=N,… (input_tokens, output_tokens, total_tokens, cost) or stop: "
	}
	for {
		fmt.Fprint(c.stderr, prompt)
		line, err := c.asker.ReadString('\n')
		v := strings.TrimSpace(line)
		switch strings.ToLower(v) {
		case "y":
			v = "yes"
		case "n":
			v = "no"
		case "s":
			v = "session"
		}
		if v != "" {
			a, perr := answerFrom(q, v)
			if perr == nil {
				return a, nil
			}
			fmt.Fprintln(c.stderr, perr)
		}
		if err != nil {
			return fsm.Answer{}, events.FieldError(events.CodeInvalid, "answer", "question %s has no answer: the input ended", q.ID)
		}
	}
}

// answerFrom reads one answer of resume's flags.
func answerFrom(p question, v string) (fsm.Answer, error) {
	yes, no := true, false
	if p.Kind == events.InterruptBudget {
		return budgetAnswerFrom(p.ID, v)
	}
	if p.Kind == events.InterruptGuardrailReview {
		if v != events.DecisionApprove && v != events.DecisionReject {
			return fsm.Answer{}, events.FieldError(events.CodeInvalid, "answer", "question %s is a review: approve or reject, not %q", p.ID, v)
		}
		return fsm.Answer{Decision: &v}, nil
	}
	switch {
	case v == "yes":
		return fsm.Answer{Confirmed: &yes}, nil
	case v == "session":
		return fsm.Answer{Confirmed: &yes, Grant: &fsm.GrantAnswer{}}, nil
	case v == "no":
		return fsm.Answer{Confirmed: &no}, nil
	case strings.HasPrefix(v, "no:"):
		msg := strings.TrimPrefix(v, "no:")
		return fsm.Answer{Confirmed: &no, RejectionMessage: &msg}, nil
	}
	return fsm.Answer{}, events.FieldError(events.CodeInvalid, "answer", "question %s takes yes, no, no:MESSAGE or session, not %q", p.ID, v)
}

// multiFlag is a flag given any number of times.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
