// Command cri-client talks to a CRI runtime as the kubelet does, one call a run, so that
// tests can drive containerd the way Kubernetes drives it.
//
//	cri-client -endpoint unix:///run/containerd/containerd.sock METHOD < request.json
//
// METHOD is a call of the CRI RuntimeService or ImageService (RunPodSandbox, ListPodSandbox,
// CreateContainer, StartContainer, ContainerStatus, ExecSync, StopContainer,
// RemoveContainer, StopPodSandbox, RemovePodSandbox, Version, Status, ImageStatus,
// ListImages): its request message is read from stdin as protobuf JSON (the field names
// of k8s.io/cri-api, e.g. "cdiDevices") and its response is printed the same way.
// Two more commands do what the kubelet does around those calls:
//
//	cri-client wait CONTAINER_ID   polls ContainerStatus until the container exited (or -timeout)
//	cri-client logs CONTAINER_ID   reads the container's CRI log file: {"stdout": ..., "stderr": ...}
//
// A failed call prints the runtime's error on stderr and exits 1; a bad invocation exits 2.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtime "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// handler runs one CRI call with the request read from JSON.
type handler func(ctx context.Context, request []byte) (proto.Message, error)

// unary makes the handler of one CRI call.
func unary[Req, Resp proto.Message](
	newRequest func() Req,
	call func(context.Context, Req, ...grpc.CallOption) (Resp, error),
) handler {
	return func(ctx context.Context, request []byte) (proto.Message, error) {
		in := newRequest()
		if err := protojson.Unmarshal(request, in); err != nil {
			return nil, fmt.Errorf("request: %w", err)
		}
		return call(ctx, in)
	}
}

func handlers(rt runtime.RuntimeServiceClient, img runtime.ImageServiceClient) map[string]handler {
	return map[string]handler{
		"Version":          unary(func() *runtime.VersionRequest { return &runtime.VersionRequest{} }, rt.Version),
		"Status":           unary(func() *runtime.StatusRequest { return &runtime.StatusRequest{} }, rt.Status),
		"RunPodSandbox":    unary(func() *runtime.RunPodSandboxRequest { return &runtime.RunPodSandboxRequest{} }, rt.RunPodSandbox),
		"StopPodSandbox":   unary(func() *runtime.StopPodSandboxRequest { return &runtime.StopPodSandboxRequest{} }, rt.StopPodSandbox),
		"RemovePodSandbox": unary(func() *runtime.RemovePodSandboxRequest { return &runtime.RemovePodSandboxRequest{} }, rt.RemovePodSandbox),
		"CreateContainer":  unary(func() *runtime.CreateContainerRequest { return &runtime.CreateContainerRequest{} }, rt.CreateContainer),
		"StartContainer":   unary(func() *runtime.StartContainerRequest { return &runtime.StartContainerRequest{} }, rt.StartContainer),
		"StopContainer":    unary(func() *runtime.StopContainerRequest { return &runtime.StopContainerRequest{} }, rt.StopContainer),
		"RemoveContainer":  unary(func() *runtime.RemoveContainerRequest { return &runtime.RemoveContainerRequest{} }, rt.RemoveContainer),
		"ContainerStatus":  unary(func() *runtime.ContainerStatusRequest { return &runtime.ContainerStatusRequest{} }, rt.ContainerStatus),
		"ListPodSandbox":   unary(func() *runtime.ListPodSandboxRequest { return &runtime.ListPodSandboxRequest{} }, rt.ListPodSandbox),
		"ListContainers":   unary(func() *runtime.ListContainersRequest { return &runtime.ListContainersRequest{} }, rt.ListContainers),
		"ExecSync":         unary(func() *runtime.ExecSyncRequest { return &runtime.ExecSyncRequest{} }, rt.ExecSync),
		"ImageStatus":      unary(func() *runtime.ImageStatusRequest { return &runtime.ImageStatusRequest{} }, img.ImageStatus),
		"ListImages":       unary(func() *runtime.ListImagesRequest { return &runtime.ListImagesRequest{} }, img.ListImages),
	}
}

// status is the container's status, as ContainerStatus returns it.
func status(ctx context.Context, rt runtime.RuntimeServiceClient, id string) (*runtime.ContainerStatus, error) {
	resp, err := rt.ContainerStatus(ctx, &runtime.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return nil, err
	}
	return resp.GetStatus(), nil
}

// wait polls the container's status, as the kubelet's pod lifecycle events do, until it exited.
func wait(ctx context.Context, rt runtime.RuntimeServiceClient, id string) (proto.Message, error) {
	for {
		st, err := status(ctx, rt, id)
		if err != nil {
			return nil, err
		}
		if st.GetState() == runtime.ContainerState_CONTAINER_EXITED {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("container %s still %s: %w", id, st.GetState(), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// logs reads the container's log file in the CRI format ("TIME STREAM TAG TEXT" a line,
// TAG P for a partial line, F for the end of one) back into its two streams.
func logs(ctx context.Context, rt runtime.RuntimeServiceClient, id string) (map[string]string, error) {
	st, err := status(ctx, rt, id)
	if err != nil {
		return nil, err
	}
	file, err := os.Open(st.GetLogPath())
	if err != nil {
		return nil, err
	}
	defer file.Close()
	streams := map[string]*strings.Builder{"stdout": {}, "stderr": {}}
	reader := bufio.NewReader(file)
	for {
		line, err := reader.ReadString('\n')
		if line != "" {
			fields := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 4)
			if len(fields) < 3 || streams[fields[1]] == nil {
				return nil, fmt.Errorf("%s: not a CRI log line: %q", st.GetLogPath(), line)
			}
			if len(fields) == 4 {
				streams[fields[1]].WriteString(fields[3])
			}
			if fields[2] == "F" {
				streams[fields[1]].WriteString("\n")
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return map[string]string{"stdout": streams["stdout"].String(), "stderr": streams["stderr"].String()}, nil
}

func run() (int, error) {
	endpoint := flag.String("endpoint", "unix:///run/containerd/containerd.sock", "the CRI runtime's socket")
	timeout := flag.Duration("timeout", 2*time.Minute, "how long one command may take")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: cri-client [-endpoint unix:///...] [-timeout 2m] METHOD < request.json")
		fmt.Fprintln(os.Stderr, "       cri-client [flags] wait|logs CONTAINER_ID")
		flag.PrintDefaults()
	}
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		flag.Usage()
		return 2, nil
	}
	conn, err := grpc.NewClient(*endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return 1, err
	}
	defer conn.Close()
	rt := runtime.NewRuntimeServiceClient(conn)
	calls := handlers(rt, runtime.NewImageServiceClient(conn))
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	var out proto.Message
	switch {
	case (args[0] == "wait" || args[0] == "logs") && len(args) == 2:
		if args[0] == "logs" {
			streams, err := logs(ctx, rt, args[1])
			if err != nil {
				return 1, err
			}
			return 0, json.NewEncoder(os.Stdout).Encode(streams)
		}
		out, err = wait(ctx, rt, args[1])
	case len(args) == 1 && calls[args[0]] != nil:
		request, readErr := io.ReadAll(os.Stdin)
		if readErr != nil {
			return 1, readErr
		}
		out, err = calls[args[0]](ctx, request)
	default:
		fmt.Fprintf(os.Stderr, "cri-client: unknown command: %s\n", strings.Join(args, " "))
		flag.Usage()
		return 2, nil
	}
	if err != nil {
		return 1, err
	}
	text, err := protojson.Marshal(out)
	if err != nil {
		return 1, err
	}
	fmt.Println(string(text))
	return 0, nil
}

func main() {
	code, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cri-client:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
