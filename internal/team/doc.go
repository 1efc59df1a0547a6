// Package team is what the people of an account know of each other in the
// shared inbox (issue 33): who can work a line (teammates, by name), the
// `@name` mentions of a note, and each person's notification preferences.
// Its rules live here; internal/store holds only their SQL, and the inbox
// asks this package whom a note mentions.
package team
