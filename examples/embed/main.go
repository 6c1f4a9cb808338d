// Command embed is a Go program with turnlog inside: it offers a typed Go function as
// a tool, loads agent.yaml, opens the log and runs a turn in-process — a turn that
// waits for a person is answered here (-approve, -reject) and resumed — or, with
// -serve, serves turnlog's REST API. It needs one import, pkg/turnlog. The turnlog
// binary is assembled the same way.
//
//	go run ./examples/embed 'weather in Oslo'
//	go run ./examples/embed -approve 'run rm -v notes.txt'
//	go run ./examples/embed -serve 127.0.0.1:8090
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/turnlog/turnlog/pkg/turnlog"
)

type weatherArgs struct {
	City string `json:"city" jsonschema:"minLength=1,description=The city to give the weather of"`
}

// getWeather is the program's own tool: a string result reaches the model as text.
func getWeather(_ context.Context, a weatherArgs) (any, error) {
	if strings.EqualFold(a.City, "Atlantis") {
		return nil, errors.New("no weather station there")
	}
	return fmt.Sprintf("%s: 18°C, light rain", a.City), nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "examples/embed/agent.yaml", "agent.yaml (relative paths in it start from its folder)")
	db := fs.String("db", filepath.Join(os.TempDir(), "turnlog-embed.db"), "the SQLite file of the log")
	workspace := fs.String("workspace", filepath.Join(os.TempDir(), "turnlog-embed-workspace"), "the folder bash works in (shared by every session)")
	serve := fs.String("serve", "", "serve the REST API on this address instead of running one turn")
	key := fs.String("key", "embed-key", "the API key -serve accepts (acting as user ana)")
	approve := fs.Bool("approve", false, "approve what the turn asks a person about, and resume it")
	reject := fs.String("reject", "", "reject what the turn asks a person about, with this message, and resume it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.MkdirAll(*workspace, 0o755); err != nil {
		return err
	}
	tl, err := turnlog.Open(ctx, turnlog.Options{
		Config:    *config,
		DB:        *db,
		Workspace: *workspace,
		Functions: turnlog.Functions{
			"get_weather": turnlog.FunctionTool("get_weather", "The weather in a city now.", getWeather),
		},
	})
	if err != nil {
		return err
	}
	defer tl.Close()
	if *serve != "" {
		ln, err := net.Listen("tcp", *serve)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "serving on http://%s\n", ln.Addr())
		return tl.Serve(ctx, ln, turnlog.ServeOptions{Keys: map[string]string{*key: "ana"}})
	}
	// tl.Turns acts as the REST API does: with a Key (turns.Key{Value: …}), a request
	// sent again acts once; input for a busy session follows the app's on_busy.
	session, err := tl.Turns.CreateSession(ctx, turnlog.Key{Owner: "ana"}, "weather", nil)
	if err != nil {
		return err
	}
	input := strings.Join(fs.Args(), " ")
	res, err := runTurn(ctx, tl, turnlog.Request{Session: session.ID, User: "ana", Input: &input})
	if err != nil {
		return err
	}
	if res.Status == turnlog.StatusSuspended {
		// The turn waits for a person: each question, and the answer given here.
		answers := map[string]turnlog.Answer{}
		for _, q := range res.Interrupts {
			fmt.Fprintf(stderr, "the turn asks: %s %s (%s)\n", q.Tool, q.Arguments, q.Reason)
			switch {
			case *approve:
				answers[q.ID] = turnlog.Yes()
			case *reject != "":
				answers[q.ID] = turnlog.No(*reject)
			default:
				return fmt.Errorf("turn %s waits for a person: give -approve or -reject MESSAGE", res.TurnID)
			}
		}
		if res, err = runTurn(ctx, tl, turnlog.Request{Session: session.ID, User: "ana", Answers: answers}); err != nil {
			return err
		}
	}
	if res.Error != nil {
		return fmt.Errorf("turn %s: %s: %s", res.Status, res.Error.Code, res.Error.Message)
	}
	_, err = fmt.Fprintln(stdout, res.Output)
	return err
}

// runTurn runs a request — input, or answers — and waits for how the turn ends.
func runTurn(ctx context.Context, tl *turnlog.Turnlog, req turnlog.Request) (*turnlog.Result, error) {
	out, err := tl.Turns.Run(ctx, req)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	return out.Wait(ctx)
}
