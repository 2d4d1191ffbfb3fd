package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	metadatav1beta1 "k8s.io/dynamic-resource-allocation/api/metadata/v1beta1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// writeRequest runs the kubelet plugin Helper with device metadata enabled through
// a sequence of calls, as a kubelet and a driver make them.
type writeRequest struct {
	Driver        string                       `json:"driver"`
	Versions      []string                     `json:"versions"`      // metadata API versions, in order
	PluginDataDir string                       `json:"pluginDataDir"` // absolute, need not exist
	CDIDir        string                       `json:"cdiDir"`        // absolute, need not exist
	Claims        []*resourceapi.ResourceClaim `json:"claims"`        // what the fake API server holds
	Steps         []writeStep                  `json:"steps"`
}

// writeStep is one call: "prepare" and "unprepare" go over the Helper's gRPC socket
// (NodePrepareResources, NodeUnprepareResources); "update" is the driver calling
// Helper.UpdateRequestMetadata.
type writeStep struct {
	Call string `json:"call"`
	// prepare, unprepare: the claims the kubelet names.
	Claims []*drapb.Claim `json:"claims"`
	// prepare: what the driver's PrepareResourceClaims returns, by claim UID.
	Results map[string]prepareResult `json:"results"`
	// update: the claim, the request (subrequest included) and its devices.
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	UID       string         `json:"uid"`
	Request   string         `json:"request"`
	Devices   []resultDevice `json:"devices"`
}

type prepareResult struct {
	Devices []resultDevice `json:"devices"`
	Error   string         `json:"error"`
}

type resultDevice struct {
	Requests     []string                               `json:"requests"`
	Pool         string                                 `json:"pool"`
	Device       string                                 `json:"device"`
	CDIDeviceIDs []string                               `json:"cdiDeviceIDs"`
	Attributes   map[string]resourceapi.DeviceAttribute `json:"attributes"`
	NetworkData  *resourceapi.NetworkDeviceData         `json:"networkData"`
	HasMetadata  bool                                   `json:"hasMetadata"`
}

func (d resultDevice) device() kubeletplugin.Device {
	dev := kubeletplugin.Device{Requests: d.Requests, PoolName: d.Pool, DeviceName: d.Device, CDIDeviceIDs: d.CDIDeviceIDs}
	if d.HasMetadata {
		dev.Metadata = &kubeletplugin.DeviceMetadata{Attributes: d.Attributes, NetworkData: d.NetworkData}
	}
	return dev
}

// fileEntry is one thing found below the plugin data or CDI directory.
type fileEntry struct {
	Type string `json:"type"` // "file", "dir", "symlink", "other"
	Mode uint32 `json:"mode"` // permission bits
	Data []byte `json:"data_b64,omitempty"`
}

type stepAnswer struct {
	Error    string                 `json:"error,omitempty"`
	Response map[string]claimAnswer `json:"response,omitempty"`
	Plugin   map[string]fileEntry   `json:"plugin"`
	CDI      map[string]fileEntry   `json:"cdi"`
}

type claimAnswer struct {
	Error   string         `json:"error"`
	Devices []deviceAnswer `json:"devices"`
}

type deviceAnswer struct {
	Requests     []string `json:"requests"`
	Pool         string   `json:"pool"`
	Device       string   `json:"device"`
	CDIDeviceIDs []string `json:"cdiDeviceIDs"`
}

// driver is the DRA driver behind the Helper: it answers what the current step says.
type driver struct {
	mu      sync.Mutex
	results map[string]prepareResult
}

func (d *driver) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		want := d.results[string(claim.UID)]
		var result kubeletplugin.PrepareResult
		if want.Error != "" {
			result.Err = fmt.Errorf("%s", want.Error)
		}
		for _, dev := range want.Devices {
			result.Devices = append(result.Devices, dev.device())
		}
		out[claim.UID] = result
	}
	return out, nil
}

func (d *driver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, claim := range claims {
		out[claim.UID] = nil
	}
	return out, nil
}

func (d *driver) HandleError(_ context.Context, err error, msg string) {
	fmt.Fprintf(os.Stderr, "goref: helper: %s: %v\n", msg, err)
}

func (d *driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

func writeOp(line []byte) (any, error) {
	var req writeRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sockDir, err := os.MkdirTemp("", "goref-sock-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(sockDir)
	socket := filepath.Join(sockDir, "dra.sock")

	client := fake.NewClientset()
	for _, claim := range req.Claims {
		if _, err := client.ResourceV1().ResourceClaims(claim.Namespace).Create(ctx, claim, metaCreate); err != nil {
			return nil, fmt.Errorf("create claim %s/%s: %w", claim.Namespace, claim.Name, err)
		}
	}
	var versions []schema.GroupVersion
	for _, v := range req.Versions {
		gv, err := schema.ParseGroupVersion(v)
		if err != nil {
			return nil, err
		}
		versions = append(versions, gv)
	}
	if versions == nil {
		versions = []schema.GroupVersion{metadatav1beta1.SchemeGroupVersion}
	}
	drv := &driver{}
	helper, err := kubeletplugin.Start(ctx, drv,
		kubeletplugin.DriverName(req.Driver),
		kubeletplugin.KubeClient(client),
		kubeletplugin.NodeName("node-goref"),
		kubeletplugin.PluginDataDirectoryPath(req.PluginDataDir),
		kubeletplugin.PluginListener(func(ctx context.Context, _ string) (net.Listener, error) {
			return (&net.ListenConfig{}).Listen(ctx, "unix", socket)
		}),
		kubeletplugin.RegistrationService(false),
		kubeletplugin.HealthService(false),
		kubeletplugin.EnableDeviceMetadata(true, versions),
		kubeletplugin.CDIDirectory(req.CDIDir),
	)
	if err != nil {
		return nil, fmt.Errorf("start the kubelet plugin helper: %w", err)
	}
	defer helper.Stop()

	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	kubelet := drapb.NewDRAPluginClient(conn)

	answers := []stepAnswer{}
	for _, step := range req.Steps {
		var ans stepAnswer
		switch step.Call {
		case "prepare":
			drv.mu.Lock()
			drv.results = step.Results
			drv.mu.Unlock()
			resp, err := kubelet.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: step.Claims})
			if err != nil {
				ans.Error = err.Error()
				break
			}
			ans.Response = map[string]claimAnswer{}
			for uid, claim := range resp.Claims {
				ca := claimAnswer{Error: claim.Error, Devices: []deviceAnswer{}}
				for _, dev := range claim.Devices {
					ca.Devices = append(ca.Devices, deviceAnswer{
						Requests: dev.RequestNames, Pool: dev.PoolName, Device: dev.DeviceName,
						CDIDeviceIDs: append([]string{}, dev.CdiDeviceIds...),
					})
				}
				ans.Response[uid] = ca
			}
		case "unprepare":
			resp, err := kubelet.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: step.Claims})
			if err != nil {
				ans.Error = err.Error()
				break
			}
			ans.Response = map[string]claimAnswer{}
			for uid, claim := range resp.Claims {
				ans.Response[uid] = claimAnswer{Error: claim.Error, Devices: []deviceAnswer{}}
			}
		case "update":
			var devices []kubeletplugin.Device
			for _, dev := range step.Devices {
				devices = append(devices, dev.device())
			}
			if err := helper.UpdateRequestMetadata(ctx, step.Namespace, step.Name, types.UID(step.UID), step.Request, devices); err != nil {
				ans.Error = err.Error()
			}
		default:
			return nil, fmt.Errorf("unknown call %q", step.Call)
		}
		if ans.Plugin, err = snapshot(req.PluginDataDir); err != nil {
			return nil, err
		}
		if ans.CDI, err = snapshot(req.CDIDir); err != nil {
			return nil, err
		}
		answers = append(answers, ans)
	}
	return map[string]any{"steps": answers}, nil
}

// snapshot lists everything below root (not root itself): type, mode, file contents.
func snapshot(root string) (map[string]fileEntry, error) {
	out := map[string]fileEntry{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && path == root {
				return filepath.SkipDir
			}
			return err
		}
		if path == root {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		entry := fileEntry{Mode: uint32(info.Mode().Perm()), Type: "other"}
		switch {
		case info.Mode().IsRegular():
			entry.Type = "file"
			if entry.Data, err = os.ReadFile(path); err != nil {
				return err
			}
		case info.IsDir():
			entry.Type = "dir"
		case info.Mode()&fs.ModeSymlink != 0:
			entry.Type = "symlink"
		}
		out[rel] = entry
		return nil
	})
	return out, err
}

var metaCreate = metav1.CreateOptions{}
