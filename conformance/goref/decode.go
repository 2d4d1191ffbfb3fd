package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/dynamic-resource-allocation/api/metadata"
	"k8s.io/dynamic-resource-allocation/api/metadata/install"
	metadatav1beta1 "k8s.io/dynamic-resource-allocation/api/metadata/v1beta1"
	"k8s.io/dynamic-resource-allocation/devicemetadata"
)

type decodeRequest struct {
	Input []byte `json:"input_b64"`
}

// decodeAnswer is the corpus' "expect" of a decode case (tests/data/conformance/README.md).
type decodeAnswer struct {
	Mode             string            `json:"mode"`
	OK               bool              `json:"ok"`
	Error            *string           `json:"error"`
	Object           json.RawMessage   `json:"object"`
	Validation       []string          `json:"validation"`
	ValidationErrors []validationError `json:"validationErrors"`
	ValidationError  *string           `json:"validationError"`
	Version          *string           `json:"version"`
}

type validationError struct {
	Field     string `json:"field"`
	Type      string `json:"type"`
	TypeText  string `json:"typeText"`
	Detail    string `json:"detail"`
	BadValue  any    `json:"badValue"`
	Origin    string `json:"origin,omitempty"`
	Stability string `json:"stability,omitempty"`
	Error     string `json:"error"`
}

var errorTypeNames = map[field.ErrorType]string{
	field.ErrorTypeNotFound:     "FieldValueNotFound",
	field.ErrorTypeRequired:     "FieldValueRequired",
	field.ErrorTypeDuplicate:    "FieldValueDuplicate",
	field.ErrorTypeInvalid:      "FieldValueInvalid",
	field.ErrorTypeNotSupported: "FieldValueNotSupported",
	field.ErrorTypeForbidden:    "FieldValueForbidden",
	field.ErrorTypeTooLong:      "FieldValueTooLong",
	field.ErrorTypeTooMany:      "FieldValueTooMany",
	field.ErrorTypeInternal:     "InternalError",
	field.ErrorTypeTypeInvalid:  "FieldValueTypeInvalid",
}

func decodeOp(line []byte) (any, error) {
	var req decodeRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, err
	}
	return decodeStream(req.Input), nil
}

// decodeStream decodes like a consumer that asks for validation and the decoded version,
// into the v1beta1 type, and re-encodes the object with encoding/json.
func decodeStream(data []byte) decodeAnswer {
	ans := decodeAnswer{Mode: "decode", Validation: []string{}, ValidationErrors: []validationError{}}
	var dest metadata.DeviceMetadata
	var validationErr error
	var gvk schema.GroupVersionKind
	err := devicemetadata.DecodeMetadataFromStream(json.NewDecoder(bytes.NewReader(data)), &dest,
		devicemetadata.DecodeMetadataWithValidationResult(&validationErr),
		devicemetadata.DecodeMetadataStoreGVKResult(&gvk))
	if validationErr != nil {
		// Go records it even when a later step (conversion) fails.
		text := validationErr.Error()
		ans.ValidationError = &text
		ans.Validation, ans.ValidationErrors = fieldErrors(validationErr)
	}
	if err != nil {
		text := err.Error()
		ans.Error = &text
		ans.Object = json.RawMessage("null")
		return ans
	}
	version := gvk.GroupVersion().String()
	ans.Version = &version
	ans.Object = v1beta1JSON(&dest)
	ans.OK = validationErr == nil
	return ans
}

// v1beta1JSON is an internal object converted to v1beta1 and encoded by encoding/json.
func v1beta1JSON(md *metadata.DeviceMetadata) json.RawMessage {
	var out metadatav1beta1.DeviceMetadata
	if err := scheme.Convert(md, &out, nil); err != nil {
		panic(fmt.Sprintf("convert to v1beta1: %v", err))
	}
	out.SetGroupVersionKind(metadatav1beta1.SchemeGroupVersion.WithKind("DeviceMetadata"))
	return marshal(&out)
}

// fieldErrors flattens an aggregate of field.Errors; anything else is one non-field error.
func fieldErrors(err error) ([]string, []validationError) {
	texts := []string{}
	records := []validationError{}
	var flat []error
	var agg interface{ Errors() []error }
	if errors.As(err, &agg) {
		flat = agg.Errors()
	} else {
		flat = []error{err}
	}
	for _, one := range flat {
		texts = append(texts, one.Error())
		var fe *field.Error
		if !errors.As(one, &fe) {
			records = append(records, validationError{Type: "non-field-error", Error: one.Error()})
			continue
		}
		stability := ""
		if fe.IsAlpha() {
			stability = "alpha"
		} else if fe.IsBeta() {
			stability = "beta"
		}
		records = append(records, validationError{
			Field: fe.Field, Type: errorTypeNames[fe.Type], TypeText: fe.Type.String(),
			Detail: fe.Detail, BadValue: fe.BadValue, Origin: fe.Origin, Stability: stability,
			Error: fe.Error(),
		})
	}
	return texts, records
}

func marshal(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// scheme knows every metadata version, for conversions of what the readers return.
var scheme = install.NewScheme()
