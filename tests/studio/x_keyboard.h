// Key taps sent to a window on an X display as a keyboard's would arrive: a press and its release
// per key, all queued at once and flushed together (so they reach the app within one of its
// frames). libX11 is opened at run time (the tests do not link it; GLFW already needs it).
#pragma once

#include <X11/Xlib.h>
#include <dlfcn.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace vkllm::test {

class XKeyboard {
public:
    explicit XKeyboard(const std::string& display) {
        lib_ = dlopen("libX11.so.6", RTLD_NOW | RTLD_LOCAL);
        if (!lib_) throw std::runtime_error("cannot open libX11.so.6");
        load(open_, "XOpenDisplay"), load(close_, "XCloseDisplay"), load(fetch_name_, "XFetchName");
        load(query_tree_, "XQueryTree"), load(free_, "XFree"), load(send_, "XSendEvent"), load(flush_, "XFlush");
        load(keysym_, "XStringToKeysym"), load(keycode_, "XKeysymToKeycode");
        display_ = open_(display.c_str());
        if (!display_) throw std::runtime_error("cannot open X display " + display);
    }
    ~XKeyboard() {
        if (display_) close_(display_);
        if (lib_) dlclose(lib_);
    }
    XKeyboard(const XKeyboard&) = delete;
    XKeyboard& operator=(const XKeyboard&) = delete;

    // The first window, depth first from the root, whose name contains `name`; 0 when none.
    Window find_window(const std::string& name) { return find(DefaultRootWindow(display_), name); }

    // A press and a release of each key, named as XStringToKeysym names them ("a", "space",
    // "BackSpace", "Return"), sent to `w` together.
    void tap(Window w, const std::vector<std::string>& keys) {
        for (const std::string& k : keys) {
            const KeyCode code = keycode_(display_, keysym_(k.c_str()));
            if (code == 0) throw std::runtime_error("no key for '" + k + "' on this display");
            for (const bool press : {true, false}) {
                XKeyEvent e{};
                e.type = press ? KeyPress : KeyRelease;
                e.display = display_;
                e.window = w;
                e.root = DefaultRootWindow(display_);
                e.subwindow = None;
                e.time = CurrentTime;
                e.same_screen = True;
                e.keycode = code;
                XEvent ev{};
                ev.xkey = e;
                send_(display_, w, True, press ? KeyPressMask : KeyReleaseMask, &ev);
            }
        }
        flush_(display_);
    }

private:
    template <class F> void load(F& f, const char* name) {
        f = reinterpret_cast<F>(dlsym(lib_, name));
        if (!f) throw std::runtime_error(std::string("libX11 has no ") + name);
    }
    Window find(Window w, const std::string& name) {
        char* n = nullptr;
        if (fetch_name_(display_, w, &n) && n) {
            const bool match = std::strstr(n, name.c_str()) != nullptr;
            free_(n);
            if (match) return w;
        }
        Window root = 0, parent = 0, *kids = nullptr;
        unsigned n_kids = 0;
        if (!query_tree_(display_, w, &root, &parent, &kids, &n_kids)) return 0;
        Window found = 0;
        for (unsigned i = 0; i < n_kids && !found; ++i) found = find(kids[i], name);
        if (kids) free_(kids);
        return found;
    }

    void* lib_ = nullptr;
    Display* display_ = nullptr;
    Display* (*open_)(const char*) = nullptr;
    int (*close_)(Display*) = nullptr;
    Status (*fetch_name_)(Display*, Window, char**) = nullptr;
    Status (*query_tree_)(Display*, Window, Window*, Window*, Window**, unsigned*) = nullptr;
    int (*free_)(void*) = nullptr;
    Status (*send_)(Display*, Window, Bool, long, XEvent*) = nullptr;
    int (*flush_)(Display*) = nullptr;
    KeySym (*keysym_)(const char*) = nullptr;
    KeyCode (*keycode_)(Display*, KeySym) = nullptr;
};

}  // namespace vkllm::test
