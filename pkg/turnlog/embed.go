package turnlog

import (
	"context"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/turns"
)

// What a Go program that embeds turnlog needs, from this one import: a turn's
// request and outcome, a person's answers, the tools it offers.
type (
	// Request is a turn's input, or the answers that resume it (tl.Turns.Run).
	Request = turns.Request
	// Key makes a request act once when it is sent again (turns.Key).
	Key = turns.Key
	// Result is how a turn ended: Status, Output, and the Interrupts it waits on.
	Result = fsm.Result
	// Interrupt is a question a suspended turn waits on.
	Interrupt = fsm.Interrupt
	// Answer is a person's answer to an interrupt (Request.Answers).
	Answer = fsm.Answer
	// GrantAnswer, with a yes, says yes for the rest of the session.
	GrantAnswer = fsm.GrantAnswer
	// Tool is a tool the program offers (Options.Functions).
	Tool = fsm.Tool
	// ToolSpec describes a tool to the model.
	ToolSpec = fsm.ToolSpec
)

// A turn's status (Result.Status).
const (
	StatusCompleted = fsm.StatusCompleted
	StatusSuspended = fsm.StatusSuspended
	StatusFailed    = fsm.StatusFailed
	StatusCanceled  = fsm.StatusCanceled
)

// FunctionTool is a Go function offered as a tool: its argument type's JSON schema
// (from its fields' json and jsonschema tags) is the tool's, the arguments are
// checked against it, and what it returns is the output (a string reaches the model
// as text; an error is a tool error the model sees). It panics on an argument type
// it cannot describe — a programming error, found when the program starts.
func FunctionTool[A any](name, description string, fn func(context.Context, A) (any, error)) Tool {
	return functool.MustNew(name, description, fn)
}

// Yes is the answer that approves a call as proposed; YesForSession approves it and,
// for the rest of the session, the calls its program and subcommand name; No rejects
// it, telling the model message (the default text when empty).
func Yes() Answer { v := true; return Answer{Confirmed: &v} }

// YesForSession: see Yes.
func YesForSession() Answer { a := Yes(); a.Grant = &GrantAnswer{}; return a }

// No: see Yes.
func No(message string) Answer {
	v := false
	a := Answer{Confirmed: &v}
	if message != "" {
		a.RejectionMessage = &message
	}
	return a
}
