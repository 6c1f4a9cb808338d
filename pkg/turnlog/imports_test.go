package turnlog_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/turnlog/turnlog"

// imports lists, per package directory of the module (non-test files), the module's
// packages it imports.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	root := filepath.Join("..", "..")
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(p, module+"/"); ok {
				out[filepath.ToSlash(dir)] = append(out[filepath.ToSlash(dir)], rest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportRules: the package graph docs/architecture.md draws. One assembly
// (pkg/turnlog) builds apps and is the only importer of httpapi; the binary is built
// on it; config decodes without adapters; the core imports no adapter.
func TestImportRules(t *testing.T) {
	t.Parallel()
	// The binary's store commands (export, rebuild, migrate, migrate-store) open the
	// stores themselves.
	storePackages := map[string]bool{"adapters/stores/sqlite": true, "adapters/stores/postgres": true, "adapters/stores/sqlrows": true}
	graph := imports(t)
	if len(graph["pkg/turnlog"]) == 0 || len(graph["."]) == 0 || len(graph["cli"]) == 0 {
		t.Fatalf("the module was not found: %v", graph)
	}
	for pkg, deps := range graph {
		kind, isAdapter := adapterKind(pkg)
		if isAdapter && kind == "" {
			t.Errorf("%s: an adapter lies in the folder of its kind (adapters/{%s}/…)", pkg, strings.Join(adapterKinds, ","))
		}
		for _, dep := range deps {
			depKind, depIsAdapter := adapterKind(dep)
			switch {
			case isAdapter && depIsAdapter && depKind != kind && !crossKind[pkg+" "+dep]:
				t.Errorf("%s imports %s: an adapter of one kind does not build on another kind's", pkg, dep)
			case dep == "httpapi" && pkg != "pkg/turnlog":
				t.Errorf("%s imports httpapi: only pkg/turnlog may", pkg)
			case pkg == "config" && (strings.HasPrefix(dep, "adapters/") || dep == "pkg/turnlog" || dep == "httpapi"):
				t.Errorf("config imports %s: it decodes and validates, the assembly builds", dep)
			case pkg == "." && dep != "cli" && !strings.HasPrefix(dep, "sandbox"):
				t.Errorf("main.go imports %s: the binary's entry calls the CLI (and gives the sandbox its helper)", dep)
			case pkg == "cli" && (dep == "config" || (strings.HasPrefix(dep, "adapters/") && !storePackages[dep])):
				t.Errorf("the CLI imports %s: it assembles apps only through pkg/turnlog (and opens only stores)", dep)
			case dep == "cli" && pkg != ".":
				t.Errorf("%s imports cli: only main.go does", pkg)
			case dep == "systemtest":
				t.Errorf("%s imports systemtest: it holds tests only", pkg)
			case (pkg == "fsm" || pkg == "events" || pkg == "projection" || pkg == "policy" || pkg == "contextmgr") && strings.HasPrefix(dep, "adapters/"):
				t.Errorf("%s imports the adapter %s", pkg, dep)
			case pkg == "undo" && dep != "events":
				t.Errorf("undo imports %s: the undo log as data stands on the events alone, below the sandbox and the stores", dep)
			case pkg == "turns" && dep != "events" && dep != "fsm" && dep != "projection":
				t.Errorf("turns imports %s: the application path of turns stands on the engine and the log only, below every transport", dep)
			case dep == "turns" && (pkg == "fsm" || pkg == "events" || pkg == "projection" || strings.HasPrefix(pkg, "adapters/")):
				t.Errorf("%s imports turns: the engine, the log and the adapters lie below the application path", pkg)
			case pkg == "events" && dep != "":
				t.Errorf("events imports %s: it imports no other turnlog package", dep)
			case pkg == "client" && dep != "":
				t.Errorf("client imports %s: it speaks only HTTP and JSON, so a program using it does not link the engine", dep)
			case dep == "client" && pkg != "cli":
				t.Errorf("%s imports client: the client is for programs that call turnlog (the CLI's --server commands, and tests)", pkg)
			}
		}
	}
}

// adapterKinds are the folders adapters/ groups its packages in.
var adapterKinds = []string{"stores", "models", "tools", "observability", "delivery"}

// crossKind are the adapters that build on another kind's: webhook deliveries are
// signed with the HTTP tools' scheme; the store conformance suite drives a scripted
// model and function tools.
var crossKind = map[string]bool{
	"adapters/delivery/webhook adapters/tools/httptool":  true,
	"adapters/stores/storetest adapters/models/scripted": true,
	"adapters/stores/storetest adapters/tools/functool":  true,
}

// adapterKind is the kind folder of an adapter package ("" when it lies in none).
func adapterKind(pkg string) (string, bool) {
	rest, ok := strings.CutPrefix(pkg, "adapters/")
	if !ok {
		return "", false
	}
	kind, _, nested := strings.Cut(rest, "/")
	if !nested || !slices.Contains(adapterKinds, kind) {
		return "", true
	}
	return kind, true
}

// TestTheRootHoldsOnlyMain: the module's root holds main.go and no other Go file —
// the CLI is package cli, the process-level tests are package systemtest.
func TestTheRootHoldsOnlyMain(t *testing.T) {
	t.Parallel()
	matches, err := filepath.Glob(filepath.Join("..", "..", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(matches) != 1 || filepath.Base(matches[0]) != "main.go" {
		t.Fatalf("the root's Go files: %v, want main.go alone", matches)
	}
}
