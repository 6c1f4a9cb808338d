package cli

import (
	"flag"

	"os"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// parseFlags parses a command's flags, then gives every flag the command line left
// unset the value of its environment twin, TURNLOG_ and its name in capitals with _
// for - (--api-keys-file: TURNLOG_API_KEYS_FILE), when that is set. A twin's bad value
// is an invalid error naming it.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var bad error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || bad != nil {
			return
		}
		name := EnvTwin(f.Name)
		if v, ok := os.LookupEnv(name); ok && v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				bad = events.FieldError(events.CodeInvalid, name, "%v", err)
			}
		}
	})
	return bad
}

// EnvTwin is the environment variable that stands for a flag.
func EnvTwin(flagName string) string {
	return "TURNLOG_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}
