package evals

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// judgeInstructions open every judge's instructions; the check's rubric follows.
const judgeInstructions = "You judge an AI agent's work against a rubric. You are shown the task the agent was given " +
	"(its inputs, one a turn) and its final answer. On the first line answer PASS if the answer meets the rubric, " +
	"else FAIL; on the next, say why in one sentence.\n\nRubric:\n"

// judgeLLM is the llm that judges ch in app: the check's, else the start agent's.
func judgeLLM(app *fsm.App, ch *JudgeCheck) string {
	if ch.LLM != "" {
		return ch.LLM
	}
	if ag, ok := app.Agents[app.StartAgent]; ok {
		return ag.LLM
	}
	return ""
}

// checkJudges refuses a judged check whose llm the app lacks, naming it.
func checkJudges(app *fsm.App, s *Suite) error {
	for i, c := range s.Cases {
		for j, ch := range c.Expect {
			if ch.Judge == nil {
				continue
			}
			if llm := judgeLLM(app, ch.Judge); app.Models[llm] == nil {
				return events.FieldError(events.CodeInvalid, fmt.Sprintf("cases[%d].expect[%d].judge.llm", i, j),
					"app %s has no llm %q to judge with", s.App, llm)
			}
		}
	}
	return nil
}

// judgeRequest is what a judge is asked: its instructions (with the rubric), the
// message showing the task and the answer, and the hash a recorded verdict is found
// by — over the llm, the instructions and the message, as a model call's request
// hash is.
func judgeRequest(llm, rubric string, inputs []string, answer string) (instructions, message, hash string) {
	instructions = judgeInstructions + strings.TrimSpace(rubric)
	var b strings.Builder
	b.WriteString("The task:\n")
	for i, in := range inputs {
		fmt.Fprintf(&b, "%d. %s\n", i+1, in)
	}
	b.WriteString("\nThe agent's final answer:\n")
	b.WriteString(answer)
	message = b.String()
	sum := sha256.Sum256(events.MustMarshal(map[string]any{"llm": llm, "instructions": instructions,
		"items": []events.Item{events.UserMessage(message)}}))
	return instructions, message, hex.EncodeToString(sum[:])
}

// verdictKey finds a recorded verdict: the run of the case it judged, the request,
// and which of the run's checks with that same request it is (from 0, in order).
type verdictKey struct {
	caseName string
	attempt  int
	hash     string
	nth      int
}

// judged is a judged check's outcome on one run: its verdict (nil: none — it needs a
// judge), and why it fails ("": it passes).
type judged struct {
	verdict *events.EvalJudged
	failure string
}

// judge judges check j of c on one run: with the verdict recorded for the same
// request, else — when the runner may call one — the judge model (a call, recorded
// by the caller); else the run needs a judge. seen counts the run's judged requests,
// so that two checks with the same request each find their own verdict.
func (r *Runner) judge(ctx context.Context, app *fsm.App, c *Case, j int, run *Run, answer string, seen map[string]int) judged {
	ch := c.Expect[j].Judge
	llm := judgeLLM(app, ch)
	instructions, message, hash := judgeRequest(llm, ch.Rubric, c.Inputs, answer)
	v := events.EvalJudged{Run: r.RunID, Case: c.Name, Attempt: run.Attempt, Check: j, Session: run.Session, LLM: llm,
		Rubric: ch.Rubric, RequestHash: hash, Message: message}
	key := verdictKey{c.Name, run.Attempt, hash, seen[hash]}
	seen[hash]++
	rec, recorded := r.verdicts[key]
	switch {
	case recorded:
		v.Verdict, v.Usage, v.Cost, v.Recorded = rec.Verdict, rec.Usage, rec.Cost, true
	case r.Replay != nil && !r.AllowJudge:
		return judged{}
	default:
		resp, err := app.Models[llm].Call(ctx, fsm.ModelRequest{LLM: llm, Agent: "eval-judge", Instructions: instructions,
			Items: []events.Item{events.UserMessage(message)}})
		if err != nil {
			return judged{failure: fmt.Sprintf("judge %q: the judge %s failed: %v", short(ch.Rubric), llm, err)}
		}
		v.Verdict, v.Usage, v.Cost = resp.Text, resp.Usage, app.CostOf(llm, resp.Usage)
	}
	v.Passed = c.regexps[j].MatchString(v.Verdict)
	out := judged{verdict: &v}
	if !v.Passed {
		out.failure = fmt.Sprintf("judge %q: %s answered %q", short(ch.Rubric), llm, events.ShortenForMessage(v.Verdict, 300))
	}
	return out
}

// short is a rubric as a failure names it.
func short(rubric string) string {
	return events.ShortenForMessage(strings.Join(strings.Fields(rubric), " "), 100)
}
