package main

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
)

// Shell completion: 'troupe completion SHELL' prints a script that asks
// the binary itself ('troupe __complete WORD...') for the candidates, so
// the scripts never list commands or flags of their own.

var completionScripts = map[string]string{
	"bash": `# bash completion for troupe: source <(troupe completion bash)
_troupe() {
	local IFS=$'\n'
	COMPREPLY=($(troupe __complete "${COMP_WORDS[@]:1:COMP_CWORD}"))
}
complete -o default -F _troupe troupe
`,
	"zsh": `#compdef troupe
# zsh completion for troupe: source <(troupe completion zsh)
_troupe() {
	local -a candidates
	candidates=(${(f)"$(troupe __complete "${(@)words[2,CURRENT]}")"})
	compadd -a candidates
}
compdef _troupe troupe
`,
	"fish": `# fish completion for troupe: troupe completion fish | source
complete -c troupe -f -a '(troupe __complete (commandline -opc)[2..-1] (commandline -ct))'
`,
}

// completionCmd is 'troupe completion bash|zsh|fish'.
func completionCmd(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("completion", "bash|zsh|fish", "print the shell completion script for bash, zsh or fish", stderr)
	rest, ok, code := cli.ParseArgs(fs, args, 1, 1)
	if !ok {
		return code
	}
	script, found := completionScripts[rest[0]]
	if !found {
		fmt.Fprintf(stderr, "troupe completion: unknown shell %q; use bash, zsh or fish\n", rest[0])
		return 2
	}
	fmt.Fprint(stdout, script)
	return 0
}

// completeCmd is 'troupe __complete WORD...', what the scripts call: the
// words after "troupe", the last being the one completed (maybe empty).
// It prints the candidates that start with it, one per line.
func completeCmd(words []string, stdout io.Writer) int {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	var candidates []string
	switch {
	case len(before) == 0:
		candidates = commands
	case strings.HasPrefix(cur, "-"):
		candidates = commandFlags(before[0])
	case before[0] == "help" && len(before) == 1:
		candidates = commands
	case before[0] == "completion" && len(before) == 1:
		candidates = []string{"bash", "fish", "zsh"}
	case before[0] == "config" && len(before) == 1:
		candidates = []string{"show"}
	}
	for _, c := range candidates {
		if strings.HasPrefix(c, cur) {
			fmt.Fprintln(stdout, c)
		}
	}
	return 0
}

// commandFlags returns the flags of command cmd, as "-name", read from
// its -h (so they are never listed twice).
func commandFlags(cmd string) []string {
	if !slices.Contains(commands, cmd) || cmd == "help" {
		return nil
	}
	var help bytes.Buffer
	run([]string{cmd, "-h"}, strings.NewReader(""), &help, &help)
	var out []string
	for _, line := range strings.Split(help.String(), "\n") {
		if name, ok := strings.CutPrefix(line, "  -"); ok {
			out = append(out, "-"+strings.Fields(name)[0])
		}
	}
	return out
}
