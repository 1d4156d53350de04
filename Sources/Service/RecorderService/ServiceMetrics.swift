import CoreMetrics
import GLibSupport
import Prometheus

/// One service's monitoring numbers, in a Prometheus registry of its own,
/// written out by the console's `/metrics`.
///
/// Two kinds of numbers go in:
/// - **Counted where they happen**, through swift-metrics (`factory`): the
///   privacy stage's frames, faces hidden, blacked-out, late and dropped
///   frames and its detection times. Those come from detection and
///   streaming threads; the registry is thread-safe.
/// - **Read when scraped** (`update`): values the recorder, the storage and the
///   link already keep (frames, chunks, disk, connection, uploads), so the
///   frame path does not count everything twice.
///
/// The registry is the service's, not the process's (`MetricsSystem.bootstrap`):
/// the tests run many services in one process and count each on its own.
///
/// Threads: `update` and `text` on the main loop; `factory` anywhere.
public final class ServiceMetrics {
    public let registry = PrometheusCollectorRegistry()
    public var factory: MetricsFactory { PrometheusMetricsFactory(registry: registry) }

    /// Counters kept by another object: the value last written, to add only what is new.
    private var mirrored: [String: (counter: Prometheus.Counter, written: Int)] = [:]
    private var gauges: [String: Prometheus.Gauge] = [:]

    public init() {}

    /// Sets the gauge `allspark_<name>` (nil: leaves it out of this scrape's change).
    public func gauge(_ name: String, _ help: String, _ value: Double?) {
        MainLoop.preconditionOnLoop()
        guard let value else { return }
        let gauge = gauges[name] ?? registry.makeGauge(descriptor: Self.descriptor(name, help))
        gauges[name] = gauge
        gauge.set(value)
    }

    /// Brings the counter `allspark_<name>` up to `total`, a count another object
    /// keeps. A smaller total (that object was replaced) starts the counter over,
    /// which Prometheus reads as a counter reset.
    public func counter(_ name: String, _ help: String, total: Int) {
        MainLoop.preconditionOnLoop()
        var entry = mirrored[name] ?? (registry.makeCounter(descriptor: Self.descriptor(name, help)), 0)
        if total < entry.written {
            entry.counter.reset()
            entry.written = 0
        }
        if total > entry.written { entry.counter.increment(by: Int64(total - entry.written)) }
        entry.written = total
        mirrored[name] = entry
    }

    private static func descriptor(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "allspark", metricName: name, unitName: "", helpText: help)
    }

    /// The Prometheus text format (0.0.4).
    public func text() -> String { registry.emitToString() }
}
