"""The confidence router: sends each task to the student or the teacher by a calibrated probability that the student succeeds."""
