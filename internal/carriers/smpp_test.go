package carriers

import "testing"

func TestTextStatus(t *testing.T) {
	for _, tc := range []struct {
		parts  []string
		status string
		final  bool
	}{
		{[]string{"DELIVRD"}, "DELIVRD", true},
		{[]string{"UNDELIV"}, "UNDELIV", true},
		{[]string{"ACCEPTD"}, "ACCEPTD", true},
		{[]string{"ENROUTE"}, "", false},
		{[]string{"DELIVRD", ""}, "", false},
		{[]string{"DELIVRD", "DELIVRD", "DELIVRD"}, "DELIVRD", true},
		{[]string{"", "EXPIRED"}, "EXPIRED", true},
		{[]string{"DELIVRD", "REJECTD", "UNDELIV"}, "REJECTD", true},
	} {
		if s, f := textStatus(tc.parts); s != tc.status || f != tc.final {
			t.Errorf("textStatus(%q) = %q, %t; want %q, %t", tc.parts, s, f, tc.status, tc.final)
		}
	}
}
