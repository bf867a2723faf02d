// celcost measures the CEL cost kube-apiserver counts for hookguard's admission policies, with the API server's own
// code: k8s.io/apiserver v0.37.2's composited compiler (as pkg/admission/plugin/policy/mutating/compilation.go and
// validating/plugin.go compile a policy) and its evaluators' runtime budgets. Nothing here estimates: each expression
// runs on each object and reports what its evaluation spent, which is what the API server holds against
// celconfig.PerCallLimit (per expression), RuntimeCELCostBudgetMatchConditions (a policy's matchConditions together)
// and RuntimeCELCostBudget (a mutation, or a binding's validations).
//
// The API server computes no estimated cost for admission policies: their `object` is declared dyn
// (pkg/admission/plugin/cel/compile.go createEnvForOpts), and creating one only compiles its expressions
// (k8s.io/kubernetes v1.37.2 pkg/apis/admissionregistration/validation/validation.go), unlike a CRD's
// x-kubernetes-validations. The runtime cost is the one limit that applies.
//
// Input on stdin, JSON: {"policies": [MutatingAdmissionPolicy|ValidatingAdmissionPolicy...], "params": ConfigMap,
// "objects": [{"name": ..., "namespace": ..., "object": Job|Pod}]}. Output on stdout, JSON: one row per expression.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
)

type input struct {
	Policies []json.RawMessage `json:"policies"`
	Params   *corev1.ConfigMap `json:"params"`
	Objects  []struct {
		Name      string          `json:"name"`
		Namespace string          `json:"namespace"`
		Object    json.RawMessage `json:"object"`
	} `json:"objects"`
}

// row is one expression's cost: the most any object made it spend, and on which.
type row struct {
	Policy     string `json:"policy"`
	Expression string `json:"expression"`
	// Group names the budget the expression shares: matchConditions, mutation, validations.
	Group     string `json:"group"`
	MaxCost   int64  `json:"maxCost"`
	MaxOn     string `json:"maxOn"`
	Evaluated int    `json:"evaluated"`
}

type expression struct {
	name      string
	group     string
	evaluator func(ctx context.Context, attributes *admission.VersionedAttributes, bindings plugincel.OptionalVariableBindings) (int64, bool, error)
}

type limits struct {
	PerCall         int64 `json:"perCall"`
	MatchConditions int64 `json:"matchConditions"`
	Runtime         int64 `json:"runtime"`
}

type output struct {
	Limits limits `json:"limits"`
	Rows   []row  `json:"rows"`
	// GroupMax is, per policy and budget, the most one object spent on the whole group.
	GroupMax map[string]map[string]int64 `json:"groupMax"`
	// Errors are the evaluations that failed: with the policies' failurePolicy Ignore, the API server then skips the
	// policy for that object (a matchCondition's error, unless another is false) or the mutation.
	Errors []failure `json:"errors"`
	// Spent is, per object, the cost of its evaluations by every policy together.
	Spent map[string]int64 `json:"spent"`
	// Milliseconds is, per object, the wall time of its evaluations by every policy, on this machine.
	Milliseconds map[string]float64 `json:"milliseconds"`
}

type failure struct {
	Policy     string `json:"policy"`
	Expression string `json:"expression"`
	Object     string `json:"object"`
	Message    string `json:"message"`
}

// request is the AdmissionRequest the API server builds for a policy (the `request` variable).
func request(attributes *admission.VersionedAttributes) *admissionv1.AdmissionRequest {
	return plugincel.CreateAdmissionRequest(attributes.Attributes, metav1.GroupVersionResource(attributes.GetResource()), metav1.GroupVersionKind(attributes.VersionedKind))
}

func condition(compiler *plugincel.CompositedCompiler, accessor plugincel.ExpressionAccessor, options plugincel.OptionalVariableDeclarations, budget int64) func(context.Context, *admission.VersionedAttributes, plugincel.OptionalVariableBindings) (int64, bool, error) {
	evaluator := compiler.CompileCondition([]plugincel.ExpressionAccessor{accessor}, options, environment.StoredExpressions)
	return func(ctx context.Context, attributes *admission.VersionedAttributes, bindings plugincel.OptionalVariableBindings) (int64, bool, error) {
		results, remaining, err := evaluator.ForInput(ctx, attributes, request(attributes), bindings, nil, budget)
		if err != nil {
			return 0, false, err
		}
		if results[0].Error != nil {
			return budget - remaining, false, results[0].Error
		}
		matched, _ := results[0].EvalResult.Value().(bool)
		return budget - remaining, matched, nil
	}
}

func mutation(compiler *plugincel.CompositedCompiler, accessor plugincel.ExpressionAccessor, options plugincel.OptionalVariableDeclarations) func(context.Context, *admission.VersionedAttributes, plugincel.OptionalVariableBindings) (int64, bool, error) {
	evaluator := compiler.CompileMutatingEvaluator(accessor, options, environment.StoredExpressions)
	return func(ctx context.Context, attributes *admission.VersionedAttributes, bindings plugincel.OptionalVariableBindings) (int64, bool, error) {
		if errs := evaluator.CompilationErrors(); len(errs) > 0 {
			return 0, false, errs[0]
		}
		result, remaining, err := evaluator.ForInput(ctx, attributes, request(attributes), bindings, nil, celconfig.RuntimeCELCostBudget)
		if err != nil {
			return 0, false, err
		}
		if result.Error != nil {
			return 0, false, result.Error
		}
		return celconfig.RuntimeCELCostBudget - remaining, true, nil
	}
}

// compiled is one policy as the API server holds it: its expressions, whether it reads params, which requests reach it.
type compiled struct {
	name        string
	expressions []expression
	hasParams   bool
	rules       []admissionregistrationv1.NamedRuleWithOperations
}

// matchConditionExpressions are a policy's matchConditions, which share one budget, as the API server's matcher
// evaluates them (pkg/admission/plugin/webhook/matchconditions/matcher.go).
func matchConditionExpressions(compiler *plugincel.CompositedCompiler, conditions []admissionregistrationv1.MatchCondition, options plugincel.OptionalVariableDeclarations) []expression {
	expressions := make([]expression, len(conditions))
	for i := range conditions {
		accessor := (*matchconditions.MatchCondition)(&conditions[i])
		expressions[i] = expression{"matchConditions " + accessor.Name, "matchConditions", condition(compiler, accessor, options, celconfig.RuntimeCELCostBudgetMatchConditions)}
	}
	return expressions
}

func compile(raw json.RawMessage) (compiled, error) {
	var meta struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return compiled{}, err
	}
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return compiled{}, err
	}
	switch meta.Kind {
	case "MutatingAdmissionPolicy":
		var policy admissionregistrationv1.MutatingAdmissionPolicy
		if err := json.Unmarshal(raw, &policy); err != nil {
			return compiled{}, err
		}
		options := plugincel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}
		expressions := matchConditionExpressions(compiler, policy.Spec.MatchConditions, options)
		patchOptions := options
		patchOptions.HasPatchTypes = true
		for i, m := range policy.Spec.Mutations {
			var accessor plugincel.ExpressionAccessor
			switch m.PatchType {
			case admissionregistrationv1.PatchTypeJSONPatch:
				accessor = &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}
			case admissionregistrationv1.PatchTypeApplyConfiguration:
				accessor = &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}
			}
			expressions = append(expressions, expression{fmt.Sprintf("mutations[%d] %s", i, m.PatchType), fmt.Sprintf("mutations[%d]", i), mutation(compiler, accessor, patchOptions)})
		}
		return compiled{policy.Name, expressions, policy.Spec.ParamKind != nil, policy.Spec.MatchConstraints.ResourceRules}, nil
	case "ValidatingAdmissionPolicy":
		var policy admissionregistrationv1.ValidatingAdmissionPolicy
		if err := json.Unmarshal(raw, &policy); err != nil {
			return compiled{}, err
		}
		options := plugincel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}
		expressions := matchConditionExpressions(compiler, policy.Spec.MatchConditions, options)
		for i, v := range policy.Spec.Validations {
			accessor := &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
			expressions = append(expressions, expression{fmt.Sprintf("validations[%d]", i), "validations", condition(compiler, accessor, options, celconfig.RuntimeCELCostBudget)})
			if v.MessageExpression != "" {
				message := &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
				expressions = append(expressions, expression{fmt.Sprintf("validations[%d].messageExpression", i), "validations", condition(compiler, message, options, celconfig.RuntimeCELCostBudget)})
			}
		}
		return compiled{policy.Name, expressions, policy.Spec.ParamKind != nil, policy.Spec.MatchConstraints.ResourceRules}, nil
	}
	return compiled{}, fmt.Errorf("not an admission policy: %q", meta.Kind)
}

// attributes are what the API server's admission chain hands a policy for a create: the typed object, converted to
// unstructured by LazyObject.CELValue as it does.
func attributes(namespace, name string, raw json.RawMessage) (*admission.VersionedAttributes, error) {
	var meta struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, err
	}
	var object runtime.Object
	var kind schema.GroupVersionKind
	var resource schema.GroupVersionResource
	switch meta.Kind {
	case "Job":
		object, kind, resource = &batchv1.Job{}, batchv1.SchemeGroupVersion.WithKind("Job"), batchv1.SchemeGroupVersion.WithResource("jobs")
	case "Pod":
		object, kind, resource = &corev1.Pod{}, corev1.SchemeGroupVersion.WithKind("Pod"), corev1.SchemeGroupVersion.WithResource("pods")
	default:
		return nil, fmt.Errorf("%s: not a Job or Pod: %q", name, meta.Kind)
	}
	if err := json.Unmarshal(raw, object); err != nil {
		return nil, err
	}
	record := admission.NewAttributesRecord(object, nil, kind, namespace, name, resource, "", admission.Create, nil, false, &user.DefaultInfo{Name: "hookguard-celcost"})
	versioned := &admission.VersionedAttributes{Attributes: record, VersionedKind: kind}
	versioned.VersionedObject.Set(object)
	return versioned, nil
}

// covers says whether a create of this object reaches a policy with these matchConstraints resourceRules.
func covers(rules []admissionregistrationv1.NamedRuleWithOperations, attributes *admission.VersionedAttributes) bool {
	resource := attributes.GetResource()
	has := func(list []string, value string) bool {
		return slices.Contains(list, value) || slices.Contains(list, "*")
	}
	for _, rule := range rules {
		operations := make([]string, len(rule.Operations))
		for i, operation := range rule.Operations {
			operations[i] = string(operation)
		}
		if has(operations, "CREATE") && has(rule.APIGroups, resource.Group) && has(rule.APIVersions, resource.Version) && has(rule.Resources, resource.Resource) {
			return true
		}
	}
	return false
}

func run() error {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	out := output{
		Limits:       limits{PerCall: celconfig.PerCallLimit, MatchConditions: celconfig.RuntimeCELCostBudgetMatchConditions, Runtime: celconfig.RuntimeCELCostBudget},
		GroupMax:     map[string]map[string]int64{},
		Milliseconds: map[string]float64{},
		Spent:        map[string]int64{},
	}
	ctx := context.Background()
	for _, raw := range in.Policies {
		policy, err := compile(raw)
		if err != nil {
			return err
		}
		name, expressions := policy.name, policy.expressions
		bindings := plugincel.OptionalVariableBindings{}
		if policy.hasParams && in.Params != nil {
			bindings.VersionedParams = in.Params
		}
		rows := make([]row, len(expressions))
		for i, e := range expressions {
			rows[i] = row{Policy: name, Expression: e.name, Group: e.group}
		}
		out.GroupMax[name] = map[string]int64{}
		for _, object := range in.Objects {
			versioned, err := attributes(object.Namespace, object.Name, object.Object)
			if err != nil {
				return err
			}
			if !covers(policy.rules, versioned) {
				continue
			}
			// As the API server's matcher does (pkg/admission/plugin/webhook/matchconditions/matcher.go Match):
			// every matchCondition is evaluated; one that is false skips the policy, errors then do not count;
			// otherwise an error fails the request (failurePolicy Fail). The rest runs only on a match.
			spent := map[string]int64{}
			matched := true
			var conditionErrors []error
			for i, e := range expressions {
				if e.group != "matchConditions" && !matched {
					continue
				}
				if e.group != "matchConditions" && len(conditionErrors) > 0 {
					break
				}
				started := time.Now()
				cost, value, err := e.evaluator(ctx, versioned, bindings)
				out.Milliseconds[object.Name] += float64(time.Since(started).Microseconds()) / 1000
				if e.group == "matchConditions" {
					if err != nil {
						conditionErrors = append(conditionErrors, err)
						out.Errors = append(out.Errors, failure{name, e.name, object.Name, err.Error()})
					} else {
						matched = matched && value
					}
				} else if err != nil {
					out.Errors = append(out.Errors, failure{name, e.name, object.Name, err.Error()})
				}
				spent[e.group] += cost
				out.Spent[object.Name] += cost
				rows[i].Evaluated++
				if cost > rows[i].MaxCost || rows[i].MaxOn == "" {
					rows[i].MaxCost, rows[i].MaxOn = cost, object.Name
				}
			}
			for group, cost := range spent {
				out.GroupMax[name][group] = max(out.GroupMax[name][group], cost)
			}
		}
		out.Rows = append(out.Rows, rows...)
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	return encoder.Encode(out)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "celcost:", err)
		os.Exit(1)
	}
}
