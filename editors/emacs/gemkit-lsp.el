;;; gemkit-lsp.el --- Lend Emacs's language clients to gemkit  -*- lexical-binding: t; -*-

;;; Commentary:

;; Answers the editor protocol's lsp/* requests and the settle member of
;; diagnostics/get (docs/editor-protocol.md) from the language clients
;; Emacs runs, eglot's servers and lsp-mode's workspaces, so that gemkit's
;; code-intelligence tools ask the servers Emacs already runs: the answers
;; reflect the buffers not saved yet, and no second server indexes the
;; project.  gemkit.el loads it when gemkit first asks.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'url-util)

(declare-function gemkit--reply "gemkit")
(declare-function gemkit--reply-error "gemkit")
(declare-function gemkit--diagnostics "gemkit")
(declare-function gemkit--revert "gemkit")
(declare-function eglot-current-server "eglot")
(declare-function eglot--capabilities "eglot")
(declare-function eglot--signal-textDocument/didChange "eglot")
(declare-function eglot--managed-buffers "eglot")
(declare-function eglot--path-to-uri "eglot")
(declare-function eglot--uri-to-path "eglot")
(declare-function eglot-lsp-abiding-column "eglot")
(declare-function jsonrpc-async-request "jsonrpc")
(declare-function jsonrpc-notify "jsonrpc")
(declare-function jsonrpc--process "jsonrpc")
(declare-function lsp-workspaces "lsp-mode")
(declare-function lsp-session "lsp-mode")
(declare-function lsp--session-workspaces "lsp-mode")
(declare-function lsp--workspace-client "lsp-mode")
(declare-function lsp--client-server-id "lsp-mode")
(declare-function lsp-request-async "lsp-mode")
(declare-function lsp-notify "lsp-mode")
(declare-function lsp "lsp-mode")
(declare-function lsp-find-session-folder "lsp-mode")
(declare-function lsp--capability "lsp-mode")
(declare-function lsp--server-capabilities "lsp-mode")
(declare-function flymake-start "flymake")
(defvar eglot--managed-mode)
(defvar eglot--servers-by-project)
(defvar eglot--versioned-identifier)
(defvar eglot--recent-changes)
(defvar eglot-current-column-function)
(defvar lsp-mode)
(defvar lsp--cur-workspace)
(defvar lsp--buffer-workspaces)
(defvar lsp--buffer-deferred)
(defvar flymake-mode)

(defconst gemkit-lsp--capabilities
  '(("textDocument/definition" . :definitionProvider)
    ("textDocument/declaration" . :declarationProvider)
    ("textDocument/typeDefinition" . :typeDefinitionProvider)
    ("textDocument/implementation" . :implementationProvider)
    ("textDocument/references" . :referencesProvider)
    ("textDocument/hover" . :hoverProvider)
    ("textDocument/documentSymbol" . :documentSymbolProvider)
    ("textDocument/prepareCallHierarchy" . :callHierarchyProvider)
    ("callHierarchy/incomingCalls" . :callHierarchyProvider)
    ("callHierarchy/outgoingCalls" . :callHierarchyProvider)
    ("workspace/symbol" . :workspaceSymbolProvider))
  "The LSP requests gemkit may ask, questions that change nothing, and
the server capability each needs.  Any other is refused.")

(defconst gemkit-lsp--max-hidden 16
  "How many files opened for gemkit alone are kept.")

(defvar gemkit-lsp--hidden (make-hash-table :test 'eq)
  "Buffers opened for gemkit alone -> when last asked about.")

(defvar gemkit-lsp--published (make-hash-table :test 'eq)
  "Buffer -> (VERSION . TIME): the document version eglot's server last
published diagnostics for (nil when it gave none), and when.")

(defconst gemkit-lsp--quiet 0.3
  "Seconds a server that gave no version must publish nothing more before
its diagnostics count: one without a version may have been computed
before the change.")

;;; Clients

(defun gemkit-lsp--eglot-p ()
  "Non-nil when eglot's clients count positions as the protocol does."
  (and (featurep 'eglot)
       (eq eglot-current-column-function #'eglot-lsp-abiding-column)))

(defun gemkit-lsp--buffer-clients (buffer)
  "The clients serving BUFFER: (eglot . SERVER) and (lsp . WORKSPACE) conses."
  (with-current-buffer buffer
    (append
     (when (and (gemkit-lsp--eglot-p) (bound-and-true-p eglot--managed-mode))
       (when-let ((server (eglot-current-server)))
         (list (cons 'eglot server))))
     (when (bound-and-true-p lsp-mode)
       (mapcar (lambda (ws) (cons 'lsp ws)) (lsp-workspaces))))))

(defun gemkit-lsp--all-clients ()
  "Every client Emacs runs."
  (append
   (when (and (gemkit-lsp--eglot-p) (boundp 'eglot--servers-by-project))
     (let (out)
       (maphash (lambda (_project servers)
                  (dolist (s servers) (push (cons 'eglot s) out)))
                eglot--servers-by-project)
       (nreverse out)))
   (when (and (featurep 'lsp-mode) (fboundp 'lsp-session))
     (mapcar (lambda (ws) (cons 'lsp ws)) (lsp--session-workspaces (lsp-session))))))

(defun gemkit-lsp--name (client)
  "The name of CLIENT: its server program's, as \"gopls\"."
  (pcase (car client)
    ('eglot (let ((cmd (ignore-errors (process-command (jsonrpc--process (cdr client))))))
              (if cmd (file-name-nondirectory (car cmd)) "eglot")))
    ('lsp (symbol-name (lsp--client-server-id (lsp--workspace-client (cdr client)))))))

(defun gemkit-lsp--supports (client method)
  "Non-nil when CLIENT's server offers METHOD."
  (let ((cap (cdr (assoc method gemkit-lsp--capabilities))))
    (pcase (car client)
      ('eglot (let ((v (plist-get (eglot--capabilities (cdr client)) cap)))
                (and v (not (eq v :json-false)))))
      ('lsp (let ((lsp--cur-workspace (cdr client)))
              (lsp--capability (substring (symbol-name cap) 1) (lsp--server-capabilities)))))))

;;; Files opened for gemkit

(defun gemkit-lsp--trim ()
  "Kill the buffers opened for gemkit beyond the most recent few."
  (let (list)
    (maphash (lambda (buf used)
               (if (or (not (buffer-live-p buf)) (get-buffer-window buf t))
                   (remhash buf gemkit-lsp--hidden) ; gone, or shown: the person's now
                 (push (cons buf used) list)))
             gemkit-lsp--hidden)
    (setq list (sort list (lambda (a b) (> (cdr a) (cdr b)))))
    (dolist (old (nthcdr gemkit-lsp--max-hidden list))
      (remhash (car old) gemkit-lsp--hidden)
      (unless (buffer-modified-p (car old))
        (kill-buffer (car old))))))

(defun gemkit-lsp--buffer (path)
  "The buffer visiting PATH, visiting it unseen when none does.
Return (BUFFER . OPENED), OPENED non-nil when it was visited now; nil
when PATH is not a file."
  (let ((buf (find-buffer-visiting path)))
    (cond
     (buf
      (when (gethash buf gemkit-lsp--hidden)
        (puthash buf (float-time) gemkit-lsp--hidden))
      ;; A file an agent wrote since is read again first, unless the
      ;; person changed the buffer.
      (with-current-buffer buf
        (unless (or (buffer-modified-p) (verify-visited-file-modtime buf))
          (let ((inhibit-message t)) (revert-buffer t t t))))
      (cons buf nil))
     ((file-regular-p path)
      ;; As when the person visits it: its major mode, and the eglot or
      ;; lsp-mode set-up of that mode, start; no window shows it.
      (setq buf (let ((inhibit-message t)) (find-file-noselect path t)))
      ;; lsp-mode set up with `lsp-deferred' waits for the buffer to be
      ;; seen: start it now, where lsp-mode knows the project (it would
      ;; ask otherwise).
      (with-current-buffer buf
        (when (and (bound-and-true-p lsp--buffer-deferred) (not (bound-and-true-p lsp-mode))
                   (lsp-find-session-folder (lsp-session) path))
          (let ((inhibit-message t)) (lsp))))
      (puthash buf (float-time) gemkit-lsp--hidden)
      (gemkit-lsp--trim)
      (cons buf t)))))

(defun gemkit-lsp--with-clients (path fn)
  "Call FN with the buffer of PATH (nil when PATH is nil) and its clients.
A file visited now may have its clients attach a moment later: wait
for them at most a second."
  (if (not path)
      (funcall fn nil (gemkit-lsp--all-clients))
    (let* ((found (gemkit-lsp--buffer path))
           (buf (car found))
           (deadline (+ (float-time) (if (cdr found) 1.0 0))))
      (if (not buf)
          (funcall fn nil nil)
        (cl-labels ((try ()
                      (let ((clients (and (buffer-live-p buf) (gemkit-lsp--buffer-clients buf))))
                        (if (or clients (>= (float-time) deadline) (not (buffer-live-p buf)))
                            (funcall fn buf clients)
                          (run-at-time 0.05 nil #'try)))))
          (try))))))

;;; JSON

(defun gemkit-lsp--json (v)
  "V, as a language client decoded it, in the form `json-serialize' takes:
null and false as :null and :false, objects as plists or hash tables."
  (cond
   ((null v) :null)
   ((eq v :json-false) :false)
   ((vectorp v) (vconcat (mapcar #'gemkit-lsp--json v)))
   ((hash-table-p v)
    (let ((h (make-hash-table :test 'equal)))
      (maphash (lambda (k x) (puthash (if (symbolp k) (symbol-name k) k) (gemkit-lsp--json x) h)) v)
      h))
   ((and (consp v) (keywordp (car v)))
    (cl-loop for (k x) on v by #'cddr append (list k (gemkit-lsp--json x))))
   (t v)))

;;; Requests

(defun gemkit-lsp--check-path (path field optional)
  "Signal an error unless PATH (FIELD) is absolute, or nil when OPTIONAL."
  (cond ((and (null path) optional) nil)
        ((not (and (stringp path) (file-name-absolute-p path)))
         (error "%s must be an absolute path" field))
        (t path)))

(defun gemkit-lsp--send (client method params buffer done timeout)
  "Ask CLIENT METHOD with PARAMS about BUFFER; call DONE with the answer.
DONE gets an alist (client, and result or error) once; TIMEOUT is in
ms, after which the answer is an error."
  (let* ((name (gemkit-lsp--name client))
         (finished nil)
         (timer nil)
         (finish (lambda (answer)
                   (unless finished
                     (setq finished t)
                     (when timer (cancel-timer timer))
                     (funcall done answer))))
         (ok (lambda (result)
               (funcall finish `((client . ,name) ,@(and result `((result . ,(gemkit-lsp--json result))))))))
         (fail (lambda (code message)
                 (funcall finish `((client . ,name) (error . ((code . ,code) (message . ,message))))))))
    (setq timer (run-at-time (/ timeout 1000.0) nil
                             (lambda () (funcall fail -32803 (format "%s did not answer within %d ms" name timeout)))))
    (pcase (car client)
      ('eglot
       ;; Send the changes eglot holds back (until Emacs is idle) first:
       ;; the buffer's, or for a workspace question every buffer's.
       (dolist (b (if buffer (list buffer) (eglot--managed-buffers (cdr client))))
         (when (buffer-live-p b)
           (with-current-buffer b (eglot--signal-textDocument/didChange))))
       (jsonrpc-async-request
        (cdr client) (intern (concat ":" method)) params
        :success-fn ok
        :error-fn (lambda (err)
                    (funcall fail (or (plist-get err :code) -32603) (format "%s" (or (plist-get err :message) err))))
        :timeout-fn #'ignore
        :timeout (/ timeout 1000.0)))
      ('lsp
       (with-current-buffer (or buffer (get-buffer-create " *gemkit-lsp*"))
         (let ((lsp--buffer-workspaces (list (cdr client)))
               (lsp--cur-workspace (cdr client)))
           (lsp-request-async
            method params
            (lambda (results) (funcall ok (cdr (car results))))
            :mode 'detached :no-merge t
            :error-handler (lambda (err) (funcall fail -32603 (format "%s" err))))))))))

(defun gemkit-lsp--request (id params)
  "Answer lsp/request ID with PARAMS."
  (let* ((path (gemkit-lsp--check-path (alist-get 'path params) "path" t))
         (method (alist-get 'method params))
         (lsp-params (alist-get 'params params))
         (only (alist-get 'client params))
         (timeout (or (alist-get 'timeout params) 10000)))
    (unless (assoc method gemkit-lsp--capabilities)
      (error "method %s is not one gemkit may ask" method))
    (gemkit-lsp--with-clients
     path
     (lambda (buf clients)
       (when (stringp only)
         (setq clients (cl-remove-if-not (lambda (c) (equal (gemkit-lsp--name c) only)) clients)))
       (let* ((names (vconcat (mapcar #'gemkit-lsp--name clients)))
              (asked (cl-remove-if-not (lambda (c) (gemkit-lsp--supports c method)) clients))
              (left (length asked))
              (answers nil))
         (when (and buf (alist-get 'textDocument lsp-params))
           (setf (alist-get 'uri (alist-get 'textDocument lsp-params))
                 (if (eq (car (car asked)) 'eglot)
                     (eglot--path-to-uri (buffer-file-name buf))
                   (concat "file://" (url-hexify-string (buffer-file-name buf) url-path-allowed-chars)))))
         (if (zerop left)
             (gemkit--reply id `((clients . ,names) (answers . [])))
           (dolist (c asked)
             (gemkit-lsp--send c method lsp-params buf
                               (lambda (answer)
                                 (push answer answers)
                                 (when (zerop (cl-decf left))
                                   (gemkit--reply id `((clients . ,names) (answers . ,(vconcat (nreverse answers)))))))
                               timeout))))))))

(defun gemkit-lsp--clients (id params)
  "Answer lsp/clients ID with PARAMS."
  (gemkit-lsp--with-clients
   (gemkit-lsp--check-path (alist-get 'path params) "path" t)
   (lambda (_buf clients)
     (gemkit--reply id `((clients . ,(vconcat (mapcar (lambda (c) `((name . ,(gemkit-lsp--name c)))) clients))))))))

(defun gemkit-lsp--changed (id params)
  "Answer lsp/changed ID with PARAMS: reload or tell the clients."
  (let ((paths (alist-get 'paths params))
        (events nil))
    (unless (vectorp paths)
      (error "paths must be a list of absolute paths"))
    (mapc (lambda (p)
            (gemkit-lsp--check-path p "paths[]" nil)
            (if (find-buffer-visiting p)
                (gemkit--revert p)
              (push `((uri . ,(concat "file://" (url-hexify-string p url-path-allowed-chars)))
                      (type . ,(if (file-exists-p p) 2 3)))
                    events)))
          paths)
    (when events
      (dolist (c (gemkit-lsp--all-clients))
        (ignore-errors
          (pcase (car c)
            ('eglot (jsonrpc-notify (cdr c) :workspace/didChangeWatchedFiles `((changes . ,(vconcat events)))))
            ('lsp (let ((lsp--cur-workspace (cdr c)))
                    (with-temp-buffer
                      (let ((lsp--buffer-workspaces (list (cdr c))))
                        (lsp-notify "workspace/didChangeWatchedFiles" `((changes . ,(vconcat events)))))))))))))
  (gemkit--reply id (make-hash-table)))

(defun gemkit-lsp--unsaved (id)
  "Answer lsp/unsaved ID: modified buffers a client serves."
  (gemkit--reply
   id `((files . ,(vconcat
                   (delq nil
                         (mapcar (lambda (buf)
                                   (let ((f (buffer-file-name buf)))
                                     (when (and f (buffer-modified-p buf) (file-regular-p f)
                                                (gemkit-lsp--buffer-clients buf))
                                       (with-current-buffer buf
                                         (save-restriction
                                           (widen)
                                           `((path . ,(expand-file-name f))
                                             (text . ,(buffer-substring-no-properties (point-min) (point-max)))))))))
                                 (buffer-list))))))))

;;;###autoload
(defun gemkit-lsp-handle (id method params)
  "Answer gemkit's request ID for METHOD, one of the lsp/* requests, with PARAMS."
  (condition-case err
      (pcase method
        ("lsp/clients" (gemkit-lsp--clients id params))
        ("lsp/request" (gemkit-lsp--request id params))
        ("lsp/changed" (gemkit-lsp--changed id params))
        ("lsp/unsaved" (gemkit-lsp--unsaved id)))
    (error (gemkit--reply-error id -32602 (format "Invalid params for %s: %s" method (error-message-string err))))))

;;; Diagnostics that are current

(defun gemkit-lsp--current-p (buf since)
  "Non-nil when BUF's diagnostics were reported for its current text.
A report without a version counts when it came after SINCE and nothing
followed it for `gemkit-lsp--quiet'."
  (or (not (buffer-live-p buf))
      (with-current-buffer buf
        (cond
         ((and (bound-and-true-p eglot--managed-mode) (gemkit-lsp--eglot-p))
          (let ((p (gethash buf gemkit-lsp--published)))
            (and (null eglot--recent-changes)
                 p
                 (if (car p)
                     (>= (car p) eglot--versioned-identifier)
                   (and (>= (cdr p) since) (>= (- (float-time) (cdr p)) gemkit-lsp--quiet))))))
         (t t)))))

;;;###autoload
(defun gemkit-lsp-settled-diagnostics (id params)
  "Answer diagnostics/get ID with PARAMS once the diagnostics are current.
The file is visited unseen when it is not; the answer waits for eglot's
server to report on the buffer's latest text, at most settle ms."
  (condition-case err
      (let* ((path (gemkit-lsp--check-path (alist-get 'path params) "path" t))
             (deadline (+ (float-time) (/ (alist-get 'settle params) 1000.0)))
             (since (float-time)))
        (cl-flet ((answer () (gemkit--reply id `((files . ,(gemkit--diagnostics path))))))
          (gemkit-lsp--with-clients
           path
           (lambda (buf _clients)
             (let ((bufs (if buf (list buf)
                           (cl-remove-if-not #'buffer-file-name (buffer-list)))))
               (dolist (b bufs)
                 (with-current-buffer b
                   (when (and (bound-and-true-p eglot--managed-mode) (gemkit-lsp--eglot-p))
                     (eglot--signal-textDocument/didChange))))
               (setq since (float-time))
               (cl-labels ((try ()
                             (if (or (cl-every (lambda (b) (gemkit-lsp--current-p b since)) bufs)
                                     (>= (float-time) deadline))
                                 (progn
                                   ;; Flymake takes what the servers
                                   ;; reported when it runs.
                                   (dolist (b bufs)
                                     (when (buffer-live-p b)
                                       (with-current-buffer b
                                         (when (bound-and-true-p flymake-mode) (flymake-start)))))
                                   (run-at-time 0.05 nil #'answer))
                               (run-at-time 0.025 nil #'try))))
                 (try)))))))
    (error (gemkit--reply-error id -32602 (format "Invalid params for diagnostics/get: %s" (error-message-string err))))))

(with-eval-after-load 'eglot
  (cl-defmethod eglot-handle-notification :after
    (_server (_method (eql textDocument/publishDiagnostics)) &key uri version &allow-other-keys)
    "Note the document version the diagnostics of URI are for, and when."
    (when-let ((buf (find-buffer-visiting (eglot--uri-to-path uri))))
      (puthash buf (cons version (float-time)) gemkit-lsp--published))))

(provide 'gemkit-lsp)
;;; gemkit-lsp.el ends here
