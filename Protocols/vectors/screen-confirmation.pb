
confirmationconfirmation
textOrder placed."shop*DoneB

Order placed.

ok