// Command dra-example-driver is the cluster suite's reference DRA driver: one process
// per driver name, built on the kubelet plugin library of k8s.io/dynamic-resource-allocation
// (its Helper, with device metadata enabled), as real drivers are.
//
//   - gpu.example.com publishes gpu-0 to gpu-3 with a UUID, a PCI address, a PCIe root
//     and a NUMA node (an int on two, a list with the physical node first on two); each
//     prepared GPU also gets the driver's own CDI device, which sets one variable.
//   - nic.example.com publishes nic-0 and nic-1; their network data is not known when
//     the claim is prepared: an NRI plugin in the same process learns of the pod's
//     sandbox (RunPodSandbox) and calls UpdateRequestMetadata, as SR-IOV's driver does,
//     so containers see generation 2.
//
// The devices are invented: nothing on the machine is touched but the files the
// library writes, the driver's CDI spec and its sockets.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	metadatav1alpha1 "k8s.io/dynamic-resource-allocation/api/metadata/v1alpha1"
	metadatav1beta1 "k8s.io/dynamic-resource-allocation/api/metadata/v1beta1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

const (
	gpuDriver = "gpu.example.com"
	nicDriver = "nic.example.com"
	// std is the domain of the standard attributes (KEP-5304).
	std = "resource.kubernetes.io/"
)

type config struct {
	driver      string
	node        string
	kubeconfig  string
	pluginDir   string
	registryDir string
	cdiDir      string
	nriSocket   string
}

func main() {
	klog.InitFlags(nil)
	var c config
	flag.StringVar(&c.driver, "driver", gpuDriver, "driver name: "+gpuDriver+" or "+nicDriver)
	flag.StringVar(&c.node, "node", "localhost", "the node's name")
	flag.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of the driver's identity")
	flag.StringVar(&c.pluginDir, "plugin-dir", "", "the plugin data directory (metadata files, DRA socket)")
	flag.StringVar(&c.registryDir, "registry-dir", "", "the kubelet's plugin registration directory")
	flag.StringVar(&c.cdiDir, "cdi-dir", "", "where the container runtime reads CDI specs")
	flag.StringVar(&c.nriSocket, "nri-socket", "", "containerd's NRI socket ("+nicDriver+" only)")
	flag.Parse()
	if c.driver != gpuDriver && c.driver != nicDriver {
		fmt.Fprintf(os.Stderr, "dra-example-driver: unknown driver %q\n", c.driver)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, c); err != nil {
		klog.ErrorS(err, "dra-example-driver failed", "driver", c.driver)
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func run(ctx context.Context, c config) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	restConfig, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	d := &driver{name: c.driver, node: c.node, cancel: cancel, prepared: map[types.UID]preparedClaim{}}
	if c.driver == gpuDriver {
		if err := writeGPUSpec(c.cdiDir, c.node); err != nil {
			return err
		}
		defer os.Remove(gpuSpecPath(c.cdiDir))
	}
	// The NRI plugin connects first: once the slices are published, pods may come.
	if c.driver == nicDriver {
		plugin, err := stub.New(d,
			stub.WithPluginName("dra-example-nic"), stub.WithPluginIdx("10"),
			stub.WithSocketPath(c.nriSocket),
			stub.WithOnClose(func() { cancel(errors.New("the NRI connection closed")) }),
		)
		if err != nil {
			return fmt.Errorf("NRI plugin: %w", err)
		}
		if err := plugin.Start(ctx); err != nil {
			return fmt.Errorf("NRI plugin: %w", err)
		}
		defer plugin.Stop()
	}
	if err := os.MkdirAll(c.pluginDir, 0o750); err != nil {
		return err
	}
	versions := []schema.GroupVersion{metadatav1beta1.SchemeGroupVersion, metadatav1alpha1.SchemeGroupVersion}
	helper, err := kubeletplugin.Start(ctx, d,
		kubeletplugin.DriverName(c.driver),
		kubeletplugin.KubeClient(client),
		kubeletplugin.NodeName(c.node),
		kubeletplugin.PluginDataDirectoryPath(c.pluginDir),
		kubeletplugin.RegistrarDirectoryPath(c.registryDir),
		kubeletplugin.EnableDeviceMetadata(true, versions),
		kubeletplugin.CDIDirectory(c.cdiDir),
	)
	if err != nil {
		return fmt.Errorf("start the kubelet plugin: %w", err)
	}
	defer helper.Stop()
	d.mu.Lock()
	d.helper = helper
	d.mu.Unlock()
	pool := resourceslice.Pool{Slices: []resourceslice.Slice{{Devices: d.devices()}}}
	resources := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{c.node: pool}}
	if err := helper.PublishResources(ctx, resources); err != nil {
		return err
	}
	klog.InfoS("driver running", "driver", c.driver, "devices", len(pool.Slices[0].Devices))
	<-ctx.Done()
	if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// preparedClaim is what the driver keeps of a claim it prepared: enough to update its
// metadata later, when a pod that uses it gets its sandbox.
type preparedClaim struct {
	namespace, name string
	pods            map[types.UID]bool
	requests        map[string][]kubeletplugin.Device
}

type driver struct {
	name, node string
	cancel     context.CancelCauseFunc

	mu       sync.Mutex
	helper   *kubeletplugin.Helper
	prepared map[types.UID]preparedClaim
}

// gpuAttributes are an invented GPU's; index selects its PCI address and NUMA placement.
func gpuAttributes(node string, index int) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	buses := []string{"3b", "5e", "86", "af"}
	roots := []string{"3a", "5d", "85", "ae"}
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"uuid":           str(gpuUUID(node, index)),
		"index":          {IntValue: ptr(int64(index))},
		std + "pciBusID": str("0000:" + buses[index] + ":00.0"),
		std + "pcieRoot": str("pci0000:" + roots[index]),
		"productName":    str("Example GPU"),
	}
	if index < 2 {
		attrs[std+"numaNode"] = resourceapi.DeviceAttribute{IntValue: ptr(int64(0))}
	} else {
		// The physical node first, then the nodes the device is as close to.
		attrs[std+"numaNode"] = resourceapi.DeviceAttribute{IntValues: []int64{1, 3}}
	}
	return attrs
}

// gpuUUID is a stable UUID for a GPU of a node, in NVIDIA's "GPU-" form.
func gpuUUID(node string, index int) string {
	s := sha256.Sum256(fmt.Appendf(nil, "%s/gpu-%d", node, index))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

func nicAttributes(index int) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	return map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"pfName":         str(fmt.Sprintf("enp94s0f%d", index)),
		std + "pciBusID": str(fmt.Sprintf("0000:5f:00.%d", index)),
		std + "pcieRoot": str("pci0000:5d"),
	}
}

// nicNetwork is the network data the NRI hook publishes for a NIC (documentation
// addresses: nothing is configured on the machine).
func nicNetwork(index int) *resourceapi.NetworkDeviceData {
	return &resourceapi.NetworkDeviceData{
		InterfaceName:   fmt.Sprintf("net%d", index+1),
		IPs:             []string{fmt.Sprintf("198.51.100.%d/24", 10+index)},
		HardwareAddress: fmt.Sprintf("02:00:c6:33:64:%02x", 10+index),
	}
}

func (d *driver) devices() []resourceapi.Device {
	var out []resourceapi.Device
	if d.name == gpuDriver {
		for i := range 4 {
			out = append(out, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: gpuAttributes(d.node, i)})
		}
		return out
	}
	for i := range 2 {
		out = append(out, resourceapi.Device{Name: fmt.Sprintf("nic-%d", i), Attributes: nicAttributes(i)})
	}
	return out
}

// attributesOf returns the published attributes of a device of this driver, as metadata
// attribute names (a string map), or nil when the driver has no such device.
func (d *driver) attributesOf(device string) map[string]resourceapi.DeviceAttribute {
	for _, dev := range d.devices() {
		if dev.Name != device {
			continue
		}
		out := make(map[string]resourceapi.DeviceAttribute, len(dev.Attributes))
		for k, v := range dev.Attributes {
			out[string(k)] = v
		}
		return out
	}
	return nil
}

func (d *driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		out[claim.UID] = d.prepare(claim)
	}
	return out, nil
}

func (d *driver) prepare(claim *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	if claim.Status.Allocation == nil {
		return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s is not allocated", claim.Namespace, claim.Name)}
	}
	kept := preparedClaim{namespace: claim.Namespace, name: claim.Name, pods: map[types.UID]bool{}, requests: map[string][]kubeletplugin.Device{}}
	for _, ref := range claim.Status.ReservedFor {
		if ref.Resource == "pods" {
			kept.pods[ref.UID] = true
		}
	}
	var result kubeletplugin.PrepareResult
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != d.name {
			continue
		}
		attrs := d.attributesOf(r.Device)
		if attrs == nil || r.Pool != d.node {
			return kubeletplugin.PrepareResult{Err: fmt.Errorf("no device %s/%s on this node", r.Pool, r.Device)}
		}
		dev := kubeletplugin.Device{
			Requests:   []string{r.Request},
			PoolName:   r.Pool,
			DeviceName: r.Device,
			Metadata:   &kubeletplugin.DeviceMetadata{Attributes: attrs},
		}
		if d.name == gpuDriver {
			dev.CDIDeviceIDs = []string{gpuDriver + "/gpu=" + r.Device}
		}
		result.Devices = append(result.Devices, dev)
		kept.requests[r.Request] = append(kept.requests[r.Request], dev)
	}
	d.prepared[claim.UID] = kept
	return result
}

func (d *driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID]error, len(claims))
	for _, claim := range claims {
		delete(d.prepared, claim.UID)
		out[claim.UID] = nil
	}
	return out, nil
}

func (d *driver) HandleError(ctx context.Context, err error, msg string) {
	klog.FromContext(ctx).Error(err, msg)
	if !errors.Is(err, kubeletplugin.ErrRecoverable) {
		d.cancel(fmt.Errorf("%s: %w", msg, err))
	}
}

func (d *driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

// RunPodSandbox is the NRI hook: the pod's sandbox exists and its containers have not
// started. Each NIC request of a claim prepared for this pod gets its network data.
func (d *driver) RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for uid, claim := range d.prepared {
		if !claim.pods[types.UID(pod.GetUid())] {
			continue
		}
		for request, devices := range claim.requests {
			updated := make([]kubeletplugin.Device, 0, len(devices))
			for _, dev := range devices {
				var index int
				if _, err := fmt.Sscanf(dev.DeviceName, "nic-%d", &index); err != nil {
					return err
				}
				meta := *dev.Metadata
				meta.NetworkData = nicNetwork(index)
				dev.Metadata = &meta
				updated = append(updated, dev)
			}
			err := d.helper.UpdateRequestMetadata(ctx, claim.namespace, claim.name, uid, request, updated)
			if err != nil {
				return fmt.Errorf("update the metadata of %s/%s request %s: %w", claim.namespace, claim.name, request, err)
			}
			klog.InfoS("network data published", "claim", claim.namespace+"/"+claim.name, "request", request, "pod", pod.GetNamespace()+"/"+pod.GetName())
		}
	}
	return nil
}

// The driver's own CDI spec: one device per GPU, each setting a variable with its UUID.
func gpuSpecPath(dir string) string { return filepath.Join(dir, gpuDriver+"-gpu.json") }

func writeGPUSpec(dir, node string) error {
	type edits struct {
		Env []string `json:"env"`
	}
	type device struct {
		Name           string `json:"name"`
		ContainerEdits edits  `json:"containerEdits"`
	}
	spec := struct {
		CDIVersion string   `json:"cdiVersion"`
		Kind       string   `json:"kind"`
		Devices    []device `json:"devices"`
	}{CDIVersion: "0.6.0", Kind: gpuDriver + "/gpu"}
	for i := range 4 {
		env := fmt.Sprintf("EXAMPLE_GPU_%d=%s", i, gpuUUID(node, i))
		spec.Devices = append(spec.Devices, device{Name: fmt.Sprintf("gpu-%d", i), ContainerEdits: edits{Env: []string{env}}})
	}
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := gpuSpecPath(dir) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, gpuSpecPath(dir))
}

func str(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }

func ptr[T any](v T) *T { return &v }
