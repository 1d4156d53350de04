import CGStreamer
import Foundation

/// The elements of a parsed pipeline and the links between them, copied
/// out of C so that checks on the graph (the privacy boundary, extra
/// sinks) are plain Swift.
///
/// Links made later, when a dynamic element (decodebin, rtspsrc …) creates
/// its pads while playing, do not exist yet after parsing. They are
/// stood in for by `possibleLinks`: from every element that can create
/// output pads to every element with an input left unlinked, a
/// superset of the links that can appear, so a check over them errs on
/// the safe side.
public struct PipelineGraph {
    public struct Node {
        public let element: Element
        public let name: String
        public let factory: String?
        /// Has no input pads and cannot get one: a source.
        public let isSource: Bool
        /// Has no output pads and cannot get one: a sink.
        public let isSink: Bool
        /// Creates output pads while running (decodebin, rtspsrc …).
        public let makesOutputsLater: Bool
        /// Has an input pad that nothing is linked into yet.
        public let hasUnlinkedInput: Bool
    }

    public let nodes: [Node]
    /// Downstream links: node index → node indexes it feeds (linked now).
    public let links: [Int: Set<Int>]

    public func index(named name: String) -> Int? { nodes.firstIndex { $0.name == name } }

    /// Links now plus the links dynamic pads may still make.
    public var possibleLinks: [Int: Set<Int>] {
        var all = links
        let waiting = nodes.indices.filter { nodes[$0].hasUnlinkedInput }
        for from in nodes.indices where nodes[from].makesOutputsLater {
            all[from, default: []].formUnion(waiting.filter { $0 != from })
        }
        return all
    }
}

extension Pipeline {
    /// Every element (bins and what they contain) and every pad link.
    public func graph() -> PipelineGraph {
        let elements = collect(gst_bin_iterate_recurse(bin)).map { Element(owning: $0.assumingMemoryBound(to: GstElement.self)) }
        let indexOf = Dictionary(elements.enumerated().map { (UnsafeMutableRawPointer($0.element.pointer), $0.offset) },
                                 uniquingKeysWith: { first, _ in first })
        var links: [Int: Set<Int>] = [:]
        var nodes: [PipelineGraph.Node] = []
        for (index, element) in elements.enumerated() {
            let sources = collect(gst_element_iterate_src_pads(element.pointer))
            let sinks = collect(gst_element_iterate_sink_pads(element.pointer))
            defer { (sources + sinks).forEach { gst_object_unref($0) } }
            var templates: [(direction: GstPadDirection, presence: GstPadPresence)] = []
            var list = cgst_element_pad_templates(element.pointer)
            while let node = list {
                if let template = node.pointee.data?.assumingMemoryBound(to: GstPadTemplate.self) {
                    templates.append((template.pointee.direction, template.pointee.presence))
                }
                list = node.pointee.next
            }
            for pad in sources {
                guard let peer = gst_pad_get_peer(pad.assumingMemoryBound(to: GstPad.self)) else { continue }
                if let owner = owningElement(of: UnsafeMutableRawPointer(peer)), let target = indexOf[owner] {
                    links[index, default: []].insert(target)
                }
                gst_object_unref(UnsafeMutableRawPointer(peer))
            }
            var unlinkedInput = false
            for pad in sinks {
                let typed = pad.assumingMemoryBound(to: GstPad.self)
                if let peer = gst_pad_get_peer(typed) {
                    gst_object_unref(UnsafeMutableRawPointer(peer))
                } else {
                    unlinkedInput = true
                }
                // A bin's input leads on to what its ghost pad targets inside.
                if cgst_is_type(pad, cgst_type_ghost_pad()) != 0,
                   let target = gst_ghost_pad_get_target(UnsafeMutableRawPointer(pad).assumingMemoryBound(to: GstGhostPad.self)) {
                    if let owner = owningElement(of: UnsafeMutableRawPointer(target)), let inner = indexOf[owner] {
                        links[index, default: []].insert(inner)
                    }
                    gst_object_unref(UnsafeMutableRawPointer(target))
                }
            }
            nodes.append(.init(
                element: element, name: element.name, factory: element.factoryName,
                isSource: sinks.isEmpty && !templates.contains { $0.direction == GST_PAD_SINK },
                isSink: sources.isEmpty && !templates.contains { $0.direction == GST_PAD_SRC },
                makesOutputsLater: templates.contains { $0.direction == GST_PAD_SRC && $0.presence == GST_PAD_SOMETIMES },
                hasUnlinkedInput: unlinkedInput))
        }
        return PipelineGraph(nodes: nodes, links: links)
    }
}

/// The element a pad belongs to; for the inner side of a bin's ghost pad, the bin.
private func owningElement(of pad: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer? {
    var object = gst_object_get_parent(pad.assumingMemoryBound(to: GstObject.self))
    defer { if let object { gst_object_unref(UnsafeMutableRawPointer(object)) } }
    if let parent = object, cgst_is_type(UnsafeMutableRawPointer(parent), cgst_type_pad()) != 0 {
        let grandparent = gst_object_get_parent(parent)
        gst_object_unref(UnsafeMutableRawPointer(parent))
        object = grandparent
    }
    guard let owner = object, cgst_is_type(UnsafeMutableRawPointer(owner), cgst_type_element()) != 0 else { return nil }
    return UnsafeMutableRawPointer(owner)
}

/// Drains a GstIterator of objects, taking a reference to each; resyncs when the set changes underneath.
private func collect(_ iterator: UnsafeMutablePointer<GstIterator>?) -> [UnsafeMutableRawPointer] {
    guard let iterator else { return [] }
    defer { gst_iterator_free(iterator) }
    var items: [UnsafeMutableRawPointer] = []
    var value = GValue()
    loop: while true {
        switch gst_iterator_next(iterator, &value) {
        case GST_ITERATOR_OK:
            if let object = g_value_dup_object(&value) { items.append(object) }
            g_value_reset(&value)
        case GST_ITERATOR_RESYNC:
            items.forEach { gst_object_unref($0) }
            items.removeAll()
            gst_iterator_resync(iterator)
        default:
            break loop
        }
    }
    g_value_unset(&value)
    return items
}

extension Element {
    /// True when the element's class has a property of that name.
    public func hasProperty(_ name: String) -> Bool {
        g_object_class_find_property(UnsafeMutableRawPointer(gobject.pointee.g_type_instance.g_class).assumingMemoryBound(to: GObjectClass.self), name) != nil
    }

    /// True when `other` is this element or inside it (a bin's child, at any depth).
    public func contains(_ other: Element) -> Bool {
        Self.object(other.pointer, isOrIsInside: pointer)
    }

    /// True when `object` is `ancestor` or has it as an ancestor.
    static func object<T, U>(_ object: UnsafeMutablePointer<T>, isOrIsInside ancestor: UnsafeMutablePointer<U>) -> Bool {
        if UInt(bitPattern: object) == UInt(bitPattern: ancestor) { return true }
        return gst_object_has_as_ancestor(UnsafeMutableRawPointer(object).assumingMemoryBound(to: GstObject.self),
                                          UnsafeMutableRawPointer(ancestor).assumingMemoryBound(to: GstObject.self)) != 0
    }
}

extension Element {
    /// Lets the pipeline play without this sink having a first frame:
    /// a sink that waits for one (the default) holds a live pipeline in
    /// PAUSED when its frames only come once the pipeline plays.
    public func stopWaitingForPreroll() {
        if hasProperty("async") {
            set("async", false)
        } else if hasProperty("async-handling") {
            set("async-handling", true)
        }
    }
}
