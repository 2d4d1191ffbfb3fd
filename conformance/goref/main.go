// Command goref answers questions with the released Go code of Kubernetes DRA device
// metadata (k8s.io/dynamic-resource-allocation, as pinned in go.mod) and of the CDI
// library container runtimes use. It is test tooling of dra-metadata: the Python
// tests start it once and send it thousands of requests.
//
// Protocol: one JSON object a line on stdin, one JSON answer a line on stdout, in
// order. Every request has "op": "decode", "read", "write", "cdi", "quote" or "version".
// A request that cannot be carried out at all gets {"harnessError": "..."}.
//
// The "read" requests need a private mount namespace (the Go readers read the fixed
// container path). Run as root, goref re-executes itself under `unshare -m` and mounts
// a tmpfs over /var/run inside that namespace, so the host's mounts are never touched.
// A "read" with an empty "root" reads the container path as it is, mounting nothing:
// that is how the static build reads the files a runtime mounted into its container.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
)

func main() {
	if err := setupMountNamespace(); err != nil {
		fmt.Fprintf(os.Stderr, "goref: %v\n", err)
		os.Exit(2)
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			if encErr := enc.Encode(answer(line)); encErr != nil {
				fmt.Fprintf(os.Stderr, "goref: encode answer: %v\n", encErr)
				os.Exit(2)
			}
			if flushErr := out.Flush(); flushErr != nil {
				os.Exit(2)
			}
		}
		if err != nil {
			return
		}
	}
}

type request struct {
	Op string `json:"op"`
}

func answer(line []byte) (result any) {
	defer func() {
		if r := recover(); r != nil {
			result = map[string]any{"harnessError": fmt.Sprintf("panic: %v\n%s", r, debug.Stack())}
		}
	}()
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return map[string]any{"harnessError": "bad request: " + err.Error()}
	}
	var err error
	switch req.Op {
	case "version":
		result, err = versions()
	case "decode":
		result, err = decodeOp(line)
	case "read":
		result, err = readOp(line)
	case "write":
		result, err = writeOp(line)
	case "cdi":
		result, err = cdiOp(line)
	case "quote":
		result, err = quoteOp(line)
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	if err != nil {
		return map[string]any{"harnessError": err.Error()}
	}
	return result
}

// quoteOp quotes each text as Go's %q verb does (strconv.Quote), which validation
// errors use for bad values.
func quoteOp(line []byte) (any, error) {
	var req struct {
		Texts []string `json:"texts"`
	}
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, err
	}
	quoted := make([]string, len(req.Texts))
	for i, text := range req.Texts {
		quoted[i] = strconv.Quote(text)
	}
	return map[string]any{"quoted": quoted}, nil
}

// versions reports the module versions this binary was built with.
func versions() (any, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil, fmt.Errorf("no build information")
	}
	mods := map[string]string{"go": info.GoVersion}
	for _, dep := range info.Deps {
		mods[dep.Path] = dep.Version
	}
	for _, setting := range info.Settings {
		if setting.Key == "GOEXPERIMENT" || setting.Key == "CGO_ENABLED" {
			mods[setting.Key] = setting.Value
		}
	}
	return mods, nil
}
