package iamcheck

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// DynamoDB's fine-grained access control (the condition keys of
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html):
//   - dynamodb:LeadingKeys is the partition key value(s) a request names:
//     the item's, the Query's key condition (an index's own partition key
//     on an index), every item's of a batch;
//   - dynamodb:Attributes is the top-level attribute names a request
//     names: the key's, the item's, and every name its expressions use; a
//     read with no projection names every attribute (AllAttributes, which
//     no attribute list allows);
//   - dynamodb:ReturnValues and dynamodb:Select are there when the request
//     sets them.
//
// A transaction is checked item by item, each as its own action
// (PutItem, UpdateItem, DeleteItem, ConditionCheckItem; GetItem for a
// TransactGetItems) with dynamodb:EnclosingOperation
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html).

// AllAttributes stands for every attribute of an item in
// dynamodb:Attributes: what a read without a projection returns.
const AllAttributes = "*"

type attributeValue map[string]any

func (v attributeValue) text() string {
	for _, t := range []string{"S", "N", "B"} {
		if s, ok := v[t].(string); ok {
			return s
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

type item map[string]attributeValue

// dynamoWrite is the shape of every single-item request and transaction
// item.
type dynamoWrite struct {
	TableName                 string
	IndexName                 string
	Key, Item                 item
	ConditionExpression       string
	UpdateExpression          string
	ProjectionExpression      string
	KeyConditionExpression    string
	FilterExpression          string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues map[string]attributeValue
	AttributesToGet           []string
	ReturnValues              string
	Select                    string
	// legacy parameters: refused, so a request naming attributes in a way
	// this does not read is never passed
	AttributeUpdates, Expected, KeyConditions, QueryFilter, ScanFilter map[string]any
}

func (a *authorizer) dynamo() error {
	var in struct {
		dynamoWrite
		RequestItems  map[string]json.RawMessage
		TransactItems []map[string]dynamoWrite
	}
	op, err := a.target(&in)
	if err != nil {
		return err
	}
	switch op {
	case "GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan":
		return a.dynamoItem("dynamodb:"+op, op, in.dynamoWrite, "")
	case "DescribeTable", "DescribeTimeToLive", "DescribeContinuousBackups":
		a.add("dynamodb:"+op, a.tableARN(in.TableName, ""), "table", nil)
		return nil
	case "ListTables":
		a.add("dynamodb:ListTables", "*", "tables", nil)
		return nil
	case "TransactWriteItems", "TransactGetItems":
		for i, ti := range in.TransactItems {
			if len(ti) != 1 {
				return fmt.Errorf("%w: %s item %d has %d actions", ErrNotUnderstood, a.out.Operation, i, len(ti))
			}
			for kind, w := range ti {
				action := map[string]string{"Put": "dynamodb:PutItem", "Update": "dynamodb:UpdateItem", "Delete": "dynamodb:DeleteItem",
					"ConditionCheck": "dynamodb:ConditionCheckItem", "Get": "dynamodb:GetItem"}[kind]
				if action == "" {
					return fmt.Errorf("%w: %s item %d: %s", ErrNotUnderstood, a.out.Operation, i, kind)
				}
				if err := a.dynamoItem(action, strings.TrimPrefix(action, "dynamodb:"), w, op); err != nil {
					return err
				}
			}
		}
		return nil
	case "BatchWriteItem", "BatchGetItem":
		return a.dynamoBatch(op, in.RequestItems)
	}
	return fmt.Errorf("%w: %s", ErrNotUnderstood, a.out.Operation)
}

// tableARN is the ARN of a table (or of one of its indexes).
func (a *authorizer) tableARN(name, index string) string {
	if strings.HasPrefix(name, "arn:") {
		return name
	}
	res := "table/" + a.ownName(name)
	if index != "" {
		res += "/index/" + index
	}
	return a.arn("dynamodb", a.s.Region, a.account, res)
}

// hashKey is the partition key attribute of a table or index of the
// template, "" for one it does not have.
func (a *authorizer) hashKey(tableName, index string) string {
	t, ok := a.p.tables[a.ownName(tableName)]
	if !ok {
		return ""
	}
	if index != "" {
		return t.indexes[index]
	}
	return t.hashKey
}

// dynamoItem checks one single-item request (or transaction item, or a
// Query or Scan) as action; op names it, enclosing is the transaction
// operation it is part of.
func (a *authorizer) dynamoItem(action, op string, w dynamoWrite, enclosing string) error {
	if len(w.AttributeUpdates)+len(w.Expected)+len(w.KeyConditions)+len(w.QueryFilter)+len(w.ScanFilter) > 0 {
		return fmt.Errorf("%w: %s uses a legacy conditional parameter", ErrNotUnderstood, a.out.Operation)
	}
	ctx := map[string][]string{}
	hash := a.hashKey(w.TableName, w.IndexName)
	var attrs []string
	expr := func(e string) error {
		n, err := exprNames(e, w.ExpressionAttributeNames)
		attrs = append(attrs, n...)
		return err
	}
	switch op {
	case "Query":
		if hash != "" {
			v, err := keyConditionValue(w.KeyConditionExpression, hash, w.ExpressionAttributeNames, w.ExpressionAttributeValues)
			if err != nil {
				return fmt.Errorf("%w: %s: %v", ErrNotUnderstood, a.out.Operation, err)
			}
			ctx["dynamodb:LeadingKeys"] = []string{v}
		}
		if err := expr(w.KeyConditionExpression); err != nil {
			return err
		}
	case "Scan":
	default:
		key := w.Key
		if op == "PutItem" {
			key = w.Item
		}
		if hash != "" {
			v, ok := key[hash]
			if !ok {
				return fmt.Errorf("%w: %s names no %s", ErrNotUnderstood, a.out.Operation, hash)
			}
			ctx["dynamodb:LeadingKeys"] = []string{v.text()}
		}
		attrs = append(attrs, slices.Collect(maps.Keys(key))...)
	}
	for _, e := range []string{w.ConditionExpression, w.UpdateExpression, w.FilterExpression, w.ProjectionExpression} {
		if err := expr(e); err != nil {
			return err
		}
	}
	attrs = append(attrs, w.AttributesToGet...)
	if (op == "GetItem" || op == "Query" || op == "Scan") && w.ProjectionExpression == "" && len(w.AttributesToGet) == 0 && w.Select != "COUNT" {
		attrs = append(attrs, AllAttributes)
	}
	slices.Sort(attrs)
	ctx["dynamodb:Attributes"] = slices.Compact(attrs)
	if w.ReturnValues != "" {
		ctx["dynamodb:ReturnValues"] = []string{w.ReturnValues}
	}
	if w.Select != "" {
		ctx["dynamodb:Select"] = []string{w.Select}
	}
	if enclosing != "" {
		ctx["dynamodb:EnclosingOperation"] = []string{enclosing}
	}
	a.add(action, a.tableARN(w.TableName, w.IndexName), leadingPrefix(ctx["dynamodb:LeadingKeys"]), ctx)
	return nil
}

// dynamoBatch checks a BatchWriteItem or BatchGetItem: one authorization
// per table, its leading keys and attributes those of every item.
func (a *authorizer) dynamoBatch(op string, items map[string]json.RawMessage) error {
	for _, tableName := range slices.Sorted(maps.Keys(items)) {
		var keys []item
		var attrs []string
		if op == "BatchWriteItem" {
			var ws []struct {
				PutRequest    *struct{ Item item }
				DeleteRequest *struct{ Key item }
			}
			if err := json.Unmarshal(items[tableName], &ws); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrNotUnderstood, a.out.Operation, err)
			}
			for _, w := range ws {
				switch {
				case w.PutRequest != nil:
					keys = append(keys, w.PutRequest.Item)
				case w.DeleteRequest != nil:
					keys = append(keys, w.DeleteRequest.Key)
				}
			}
		} else {
			var g struct {
				Keys                     []item
				ProjectionExpression     string
				ExpressionAttributeNames map[string]string
			}
			if err := json.Unmarshal(items[tableName], &g); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrNotUnderstood, a.out.Operation, err)
			}
			keys = g.Keys
			n, err := exprNames(g.ProjectionExpression, g.ExpressionAttributeNames)
			if err != nil {
				return err
			}
			if g.ProjectionExpression == "" {
				n = append(n, AllAttributes)
			}
			attrs = append(attrs, n...)
		}
		hash := a.hashKey(tableName, "")
		var leading []string
		for _, k := range keys {
			attrs = append(attrs, slices.Collect(maps.Keys(k))...)
			if hash != "" {
				leading = append(leading, k[hash].text())
			}
		}
		slices.Sort(attrs)
		slices.Sort(leading)
		ctx := map[string][]string{"dynamodb:Attributes": slices.Compact(attrs)}
		if hash != "" {
			ctx["dynamodb:LeadingKeys"] = slices.Compact(leading)
		}
		a.add("dynamodb:"+op, a.tableARN(tableName, ""), leadingPrefix(ctx["dynamodb:LeadingKeys"]), ctx)
	}
	return nil
}

// leadingPrefix is how a request's leading keys are tallied: the key
// design's prefix of each (up to and including its first '#'; an account
// id, which the due index is keyed by, as acct_*; else the whole value),
// joined.
func leadingPrefix(keys []string) string {
	var out []string
	for _, k := range keys {
		switch i := strings.IndexByte(k, '#'); {
		case i >= 0:
			k = k[:i+1]
		case strings.HasPrefix(k, "acct_"):
			k = "acct_*"
		}
		out = append(out, k)
	}
	slices.Sort(out)
	if len(out) == 0 {
		return "(no leading key)"
	}
	return strings.Join(slices.Compact(out), ",")
}

// token is one lexical element of a DynamoDB expression.
type token struct {
	kind byte // 'n' attribute name (resolved), 'v' value placeholder, 'o' anything else
	text string
	top  bool // a name that starts a path (not after '.')
}

// tokens scans an expression into names (placeholders resolved through
// names), values and the rest, as the expression grammar of
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.html
// has them: a bare word is an attribute name unless it is a keyword or is
// followed by '(' (a function).
func tokens(expr string, names map[string]string) ([]token, error) {
	keywords := map[string]bool{"SET": true, "REMOVE": true, "ADD": true, "DELETE": true, "AND": true, "OR": true,
		"NOT": true, "BETWEEN": true, "IN": true}
	var out []token
	dot := false
	word := func(i int) int {
		j := i
		for j < len(expr) && (expr[j] == '_' || expr[j] >= 'a' && expr[j] <= 'z' || expr[j] >= 'A' && expr[j] <= 'Z' || expr[j] >= '0' && expr[j] <= '9') {
			j++
		}
		return j
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			j := word(i + 1)
			n, ok := names[expr[i:j]]
			if !ok {
				return nil, fmt.Errorf("%w: expression %q: %s is not in ExpressionAttributeNames", ErrNotUnderstood, expr, expr[i:j])
			}
			out = append(out, token{kind: 'n', text: n, top: !dot})
			dot, i = false, j
		case c == ':':
			j := word(i + 1)
			out = append(out, token{kind: 'v', text: expr[i:j]})
			dot, i = false, j
		case c == '.':
			dot, i = true, i+1
		case c == '[':
			j := strings.IndexByte(expr[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("%w: expression %q", ErrNotUnderstood, expr)
			}
			i += j + 1
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := word(i)
			w := expr[i:j]
			k := j
			for k < len(expr) && expr[k] == ' ' {
				k++
			}
			switch {
			case keywords[strings.ToUpper(w)], k < len(expr) && expr[k] == '(':
				out = append(out, token{kind: 'o', text: w})
			default:
				out = append(out, token{kind: 'n', text: w, top: !dot})
			}
			dot, i = false, j
		default:
			j := i + 1
			if (c == '<' || c == '>') && j < len(expr) && (expr[j] == '=' || expr[j] == '>') {
				j++
			}
			out = append(out, token{kind: 'o', text: expr[i:j]})
			dot, i = false, j
		}
	}
	return out, nil
}

// exprNames returns the top-level attribute names expr uses.
func exprNames(expr string, names map[string]string) ([]string, error) {
	ts, err := tokens(expr, names)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range ts {
		if t.kind == 'n' && t.top {
			out = append(out, t.text)
		}
	}
	return out, nil
}

// keyConditionValue is the value a Query's key condition gives the
// partition key attribute hash (hash = :v or :v = hash).
func keyConditionValue(expr, hash string, names map[string]string, values map[string]attributeValue) (string, error) {
	ts, err := tokens(expr, names)
	if err != nil {
		return "", err
	}
	for i := 0; i+2 < len(ts); i++ {
		l, op, r := ts[i], ts[i+1], ts[i+2]
		if op.text != "=" {
			continue
		}
		if r.kind == 'n' && r.text == hash && l.kind == 'v' {
			l, r = r, l
		}
		if l.kind == 'n' && l.text == hash && r.kind == 'v' {
			v, ok := values[r.text]
			if !ok {
				return "", fmt.Errorf("key condition %q: %s is not in ExpressionAttributeValues", expr, r.text)
			}
			return v.text(), nil
		}
	}
	return "", fmt.Errorf("key condition %q has no %s = :value", expr, hash)
}
