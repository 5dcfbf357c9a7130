// Package doctable reads the Markdown tables of the repository's docs, so a
// test can check a table a reader trusts against the code it describes.
package doctable

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Rows returns the body rows of the first Markdown table under the line
// heading (for example "## Catalog type → files and load scripts") in the
// file at path: the header and separator rows dropped, cells trimmed and
// backticks removed. A missing heading or a table without rows is an error.
func Rows(path, heading string) ([][]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		return nil, fmt.Errorf("%s has no heading %q", path, heading)
	}
	var rows [][]string
	sc := bufio.NewScanner(strings.NewReader(after))
	inTable, header := false, true
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		if header || strings.HasPrefix(line, "|---") {
			header = false
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.ReplaceAll(strings.TrimSpace(c), "`", ""))
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no table rows under %q", path, heading)
	}
	return rows, nil
}
