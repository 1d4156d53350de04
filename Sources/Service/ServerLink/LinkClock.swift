import Foundation
import GLibSupport

// The link's timers (reconnect delay, keep-alive watchdog, reply deadline, upload
// retries) run on the service's one clock (GLibSupport's `LoopClock`): GLib
// main-loop timers in production, ClockTesting's `TestClock` in tests.
public typealias LinkClock = LoopClock
public typealias LinkTimer = LoopTimer
