package demo

import (
	"strconv"
	"time"
)

// The demo's patients: one number, one name, the same in the calls and the
// texts. Patient k (0 ≤ k < Patients) has the number 1415555(2000+k); a
// family texting as a group adds 1415555(6000+k) and 1415555(7000+k), who
// share patient k's last name.
const Patients = 400

var (
	firstNames = []string{"Olivia", "Noah", "Emma", "Liam", "Ava", "Elijah", "Sophia", "Lucas", "Mia", "Mason",
		"Isabella", "Ethan", "Harper", "Logan", "Amelia", "James", "Evelyn", "Benjamin", "Abigail", "Henry"}
	lastNames = []string{"Brown", "Wilson", "Davis", "Miller", "Moore", "Taylor", "Anderson", "Thomas", "Jackson", "White",
		"Harris", "Martin", "Thompson", "Garcia", "Martinez", "Robinson", "Clark", "Rodriguez", "Lewis", "Walker"}
)

// patientNumber is patient k's number.
func patientNumber(k int) string { return "1415555" + strconv.Itoa(2000+k) }

// patientName is the name of the patient with number n: distinct for the
// Patients numbers (first and last name each from their own digit of k),
// "" for a number that is no patient's.
func patientName(n string) string {
	if len(n) != 11 || n[:7] != "1415555" {
		return ""
	}
	v, err := strconv.Atoi(n[7:])
	if err != nil {
		return ""
	}
	k, family := v%1000, v/1000
	if k >= Patients || (family != 2 && family != 6 && family != 7) {
		return ""
	}
	// Relatives (6xxx, 7xxx) get other first names and the same last name.
	first := (k + map[int]int{2: 0, 6: 3, 7: 11}[family]) % len(firstNames)
	return firstNames[first] + " " + lastNames[k/len(firstNames)%len(lastNames)]
}

// firstName is the first word of a patient's name.
func firstName(n string) string {
	name := patientName(n)
	for i := range name {
		if name[i] == ' ' {
			return name[:i]
		}
	}
	return name
}

// The clinic keeps office hours in its own time zone: weekdays 8:00 to
// 18:00, Saturdays 9:00 to 13:00.
var clinic = mustLocation("America/Chicago")

func mustLocation(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// officeHours returns the hours the clinic opens and closes on t's day
// (0, 0 on Sundays).
func officeHours(t time.Time) (open, closing int) {
	switch t.In(clinic).Weekday() {
	case time.Sunday:
		return 0, 0
	case time.Saturday:
		return 9, 13
	}
	return 8, 18
}

// inOffice reports whether the clinic is open at t.
func inOffice(t time.Time) bool {
	open, closing := officeHours(t)
	h := t.In(clinic).Hour()
	return h >= open && h < closing
}

// nextOpen is t if the clinic is open then, else its next opening.
func nextOpen(t time.Time) time.Time {
	for !inOffice(t) {
		lt := t.In(clinic)
		open, _ := officeHours(lt)
		if open > 0 && lt.Hour() < open {
			return time.Date(lt.Year(), lt.Month(), lt.Day(), open, 0, 0, 0, clinic)
		}
		t = time.Date(lt.Year(), lt.Month(), lt.Day()+1, 0, 0, 0, 0, clinic)
	}
	return t
}
