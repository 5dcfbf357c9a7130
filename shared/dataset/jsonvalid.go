package dataset

import "unicode/utf8"

// maxJSONDepth bounds nesting, as encoding/json does, so a hostile value
// cannot exhaust the stack.
const maxJSONDepth = 10000

// ValidJSON reports whether b holds exactly one JSON value (RFC 8259),
// optionally surrounded by whitespace, and is valid UTF-8 throughout. It
// scans b once, decodes nothing and allocates nothing: json.Valid accepts
// invalid UTF-8 inside strings, which a JSON column must never carry (the
// files' readers refuse it, or silently replace it).
func ValidJSON(b []byte) bool {
	s := jsonScan{b: b}
	s.space()
	if !s.value(0) {
		return false
	}
	s.space()
	return s.i == len(b)
}

type jsonScan struct {
	b []byte
	i int
}

func (s *jsonScan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScan) value(depth int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{' || c == '[':
		if depth == maxJSONDepth {
			return false
		}
		if c == '{' {
			return s.object(depth + 1)
		}
		return s.array(depth + 1)
	case c == '"':
		return s.str()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return false
}

// next skips whitespace and reports whether the next byte is c, consuming it.
func (s *jsonScan) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *jsonScan) object(depth int) bool {
	s.i++ // {
	if s.next('}') {
		return true
	}
	for {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != '"' || !s.str() || !s.next(':') {
			return false
		}
		s.space()
		if !s.value(depth) {
			return false
		}
		if s.next('}') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

func (s *jsonScan) array(depth int) bool {
	s.i++ // [
	if s.next(']') {
		return true
	}
	for {
		s.space()
		if !s.value(depth) {
			return false
		}
		if s.next(']') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// str scans a string from its opening quote: escapes as RFC 8259 has them,
// no control characters, and valid UTF-8.
func (s *jsonScan) str() bool {
	s.i++ // "
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return true
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return false
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !isHex(h) {
						return false
					}
				}
				s.i += 6
			default:
				return false
			}
		case c < 0x20:
			return false
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, n := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && n == 1 {
				return false
			}
			s.i += n
		}
	}
	return false
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func (s *jsonScan) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

func (s *jsonScan) number() bool {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case !s.digits():
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

func (s *jsonScan) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}
