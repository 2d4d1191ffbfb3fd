package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/dynamic-resource-allocation/api/metadata"
	"k8s.io/dynamic-resource-allocation/devicemetadata"
)

// nsEnv marks the process that runs inside its own mount namespace.
const nsEnv = "GOREF_MOUNT_NAMESPACE"

// inNamespace is true when the readers' fixed path is ours to mount over.
var inNamespace bool

// setupMountNamespace re-executes goref under `unshare -m` (as root), then mounts a
// tmpfs over /var/run in that private namespace and creates the container directory
// there. Without root, "read" requests answer with a harness error saying so.
func setupMountNamespace() error {
	if os.Geteuid() != 0 {
		return nil
	}
	if os.Getenv(nsEnv) == "" {
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			return nil // no util-linux: reads are refused, the rest works
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		os.Setenv(nsEnv, "1")
		args := append([]string{unshare, "--mount", "--propagation", "private", self}, os.Args[1:]...)
		return syscall.Exec(unshare, args, os.Environ())
	}
	run, err := filepath.EvalSymlinks("/var/run")
	if err != nil {
		return fmt.Errorf("resolve /var/run: %w", err)
	}
	if err := syscall.Mount("tmpfs", run, "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("mount tmpfs on %s in the private namespace: %w", run, err)
	}
	if err := os.MkdirAll(metadata.ContainerDir, 0o755); err != nil {
		return err
	}
	inNamespace = true
	return nil
}

type readRequest struct {
	Root     string `json:"root"`     // the tree to show at the container path; "": read it as it is
	Template bool   `json:"template"` // ReadResourceClaimTemplateMetadata*
	Name     string `json:"name"`     // claim name or pod claim name
	Request  string `json:"request"`
	Driver   string `json:"driver"` // set: the one-driver reader
}

type readAnswer struct {
	OK     bool            `json:"ok"`
	Error  *string         `json:"error"`
	Object json.RawMessage `json:"object"`
}

func readOp(line []byte) (any, error) {
	var req readRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, err
	}
	// An empty root reads the container path as it is: inside a container, where the
	// runtime mounted the files (the CRI suite runs the static harness there).
	if req.Root != "" {
		if !inNamespace {
			return nil, fmt.Errorf("read needs root and unshare: goref mounts the tree on %s in a private mount namespace", metadata.ContainerDir)
		}
		if err := syscall.Mount(req.Root, metadata.ContainerDir, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return nil, fmt.Errorf("bind mount %s: %w", req.Root, err)
		}
		defer func() {
			if err := syscall.Unmount(metadata.ContainerDir, syscall.MNT_DETACH); err != nil {
				panic(err)
			}
		}()
	}
	var md *metadata.DeviceMetadata
	var err error
	switch {
	case req.Template && req.Driver != "":
		md, err = devicemetadata.ReadResourceClaimTemplateMetadataWithDriverName(req.Driver, req.Name, req.Request)
	case req.Template:
		md, err = devicemetadata.ReadResourceClaimTemplateMetadata(req.Name, req.Request)
	case req.Driver != "":
		md, err = devicemetadata.ReadResourceClaimMetadataWithDriverName(req.Driver, req.Name, req.Request)
	default:
		md, err = devicemetadata.ReadResourceClaimMetadata(req.Name, req.Request)
	}
	if err != nil {
		// The tree's own path instead of the container path, as a reader given a root says it.
		text := err.Error()
		if req.Root != "" {
			text = strings.ReplaceAll(text, metadata.ContainerDir, req.Root)
		}
		return readAnswer{Error: &text, Object: json.RawMessage("null")}, nil
	}
	return readAnswer{OK: true, Object: v1beta1JSON(md)}, nil
}
