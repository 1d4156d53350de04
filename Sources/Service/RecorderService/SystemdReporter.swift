import Foundation
import GLibSupport
import Logging
import Recorder
import ServerLink
import SystemdSupport

/// Whether a watchdog tick may tell systemd "alive": only when frames
/// reached the chunks since the last tick. A frozen or absent camera, a
/// pipeline retrying forever or a stuck main loop all stop the pings, so
/// systemd's `WatchdogSec=` restarts the unit instead of showing it healthy.
public struct FrameWatchdog: Equatable {
    private var lastRecorded: Int?

    public init() {}

    /// True to ping: `recording` and more frames recorded than at the last tick.
    public mutating func tick(recordedFrames: Int, recording: Bool) -> Bool {
        defer { lastRecorded = recordedFrames }
        guard recording, let last = lastRecorded else { return false }
        return recordedFrames > last
    }
}

/// The `STATUS=` line systemd shows (`systemctl status`): what the service does.
public enum ServiceStatusText {
    public static func text(state: Recorder.State, statistics: FrameStatistics, chunks: Int, link: ServerLink.State?) -> String {
        var parts: [String] = []
        switch state {
        case .recording:
            var what = "recording"
            if statistics.width > 0 { what += " \(statistics.width)x\(statistics.height)" }
            if statistics.framesPerSecond > 0 { what += String(format: "@%.0f", statistics.framesPerSecond) }
            parts.append(what)
        default:
            parts.append(state.description)
        }
        parts.append("\(chunks) chunk\(chunks == 1 ? "" : "s")")
        parts.append(link.map { "server \($0)" } ?? "no server")
        return parts.joined(separator: ", ")
    }
}

/// Tells systemd (sd_notify) how the service is: `READY=1` once the first
/// frame reaches the chunks, `WATCHDOG=1` at half of `WATCHDOG_USEC` while
/// frames keep reaching them, `STATUS=` when what it does changes, `STOPPING=1` on stop.
///
/// Threading: main loop only; the tick is a main-loop timer, so a stuck loop sends no ping.
final class SystemdReporter {
    private let notifier: SystemdNotifier
    private let logger: Logger
    private var timer: MainLoop.Source?
    private var watchdog = FrameWatchdog()
    private var ready = false
    private var lastStatus = ""
    private var failedOnce = false

    init(notifier: SystemdNotifier, logger: Logger) {
        self.notifier = notifier
        self.logger = logger
    }

    /// Starts the ticks; `look` reads the service's state each time.
    func start(look: @escaping () -> (state: Recorder.State, statistics: FrameStatistics, chunks: Int, link: ServerLink.State?)?) {
        // Without a watchdog the tick only refreshes STATUS (chunk counts); a few seconds is enough.
        let interval = notifier.watchdogTimeout.map { $0 / 2 } ?? 5
        if let timeout = notifier.watchdogTimeout {
            logger.info("systemd watchdog: \(String(format: "%g", timeout)) s; pinging while frames are recorded")
        }
        let tick = { [weak self] () -> Bool in
            guard let self, let now = look() else { return false }
            self.update(now.state, now.statistics, now.chunks, now.link)
            return true
        }
        _ = tick()
        timer = MainLoop.every(interval, tick)
    }

    /// Called on each recorder state change too, so READY and STATUS do not wait for a tick.
    func update(_ state: Recorder.State, _ statistics: FrameStatistics, _ chunks: Int, _ link: ServerLink.State?) {
        var fields: [String] = []
        if !ready, state == .recording {
            ready = true
            fields.append("READY=1")
        }
        if notifier.watchdogTimeout != nil, watchdog.tick(recordedFrames: statistics.recorded, recording: state == .recording) {
            fields.append("WATCHDOG=1")
        }
        let status = ServiceStatusText.text(state: state, statistics: statistics, chunks: chunks, link: link)
        if status != lastStatus {
            lastStatus = status
            fields.append("STATUS=" + status)
        }
        send(fields)
    }

    /// Stops the pings and says the service is stopping.
    func stopping(_ reason: String) {
        timer?.cancel()
        timer = nil
        send(["STOPPING=1", "STATUS=stopping: " + reason])
    }

    private func send(_ fields: [String]) {
        guard !fields.isEmpty else { return }
        if !notifier.notify(fields), !failedOnce {
            failedOnce = true
            logger.warning("cannot notify systemd at \(notifier.socketPath): \(String(cString: strerror(errno)))")
        }
    }
}
