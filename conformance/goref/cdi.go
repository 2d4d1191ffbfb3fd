package main

import (
	"encoding/json"
	"sort"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

// cdiRequest loads a CDI spec directory as a container runtime does and injects
// the named devices into an empty OCI spec.
type cdiRequest struct {
	Dir     string   `json:"dir"`
	Devices []string `json:"devices"`
}

type cdiAnswer struct {
	Errors     map[string][]string `json:"errors"`     // spec file -> its errors
	Devices    []string            `json:"devices"`    // every device the cache knows
	Unresolved []string            `json:"unresolved"` // devices InjectDevices did not find
	InjectErr  *string             `json:"injectError"`
	Mounts     []oci.Mount         `json:"mounts"`
}

func cdiOp(line []byte) (any, error) {
	var req cdiRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, err
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(req.Dir), cdi.WithAutoRefresh(false))
	ans := cdiAnswer{Errors: map[string][]string{}, Mounts: []oci.Mount{}, Unresolved: []string{}}
	if err != nil {
		text := "new cache: " + err.Error()
		ans.InjectErr = &text
	}
	for path, errs := range cache.GetErrors() {
		for _, one := range errs {
			ans.Errors[path] = append(ans.Errors[path], one.Error())
		}
	}
	ans.Devices = cache.ListDevices()
	sort.Strings(ans.Devices)
	if len(req.Devices) > 0 {
		spec := &oci.Spec{}
		unresolved, err := cache.InjectDevices(spec, req.Devices...)
		if err != nil {
			text := err.Error()
			ans.InjectErr = &text
		}
		if unresolved != nil {
			ans.Unresolved = unresolved
		}
		if spec.Mounts != nil {
			ans.Mounts = spec.Mounts
		}
	}
	return ans, nil
}
