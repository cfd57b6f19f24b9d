/*
 * switch.S — the fiber context switch for x86-64 (System V) and aarch64
 * (AAPCS64). Only what the ABI says a call preserves is saved: everything
 * else is already dead at a call boundary. That, and no signal-mask syscall,
 * is why this is ~20x faster than swapcontext().
 *
 * void fl__ctx_switch(void **save_sp, void *to_sp)
 *   pushes the callee-saved state, stores sp in *save_sp, switches to
 *   to_sp and pops the state saved there, returning into the other fiber.
 *
 * void fl__ctx_trampoline(void)
 *   where a new fiber's first switch "returns" to: the fiber pointer was
 *   planted in a callee-saved register slot (rbx / x19); it calls
 *   fl__fiber_entry(fiber), which never returns.
 */

#if defined(__x86_64__)

	.text
	.globl	fl__ctx_switch
	.hidden	fl__ctx_switch
	.type	fl__ctx_switch, @function
	.p2align 4
fl__ctx_switch:
	.cfi_startproc
	pushq	%rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	/* MXCSR control bits and the x87 control word are callee-saved too:
	 * a fiber that changes rounding must not change it for the others. */
	subq	$8, %rsp
	stmxcsr	(%rsp)
	fnstcw	4(%rsp)
	movq	%rsp, (%rdi)
	movq	%rsi, %rsp
	ldmxcsr	(%rsp)
	fldcw	4(%rsp)
	addq	$8, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	ret
	.cfi_endproc
	.size	fl__ctx_switch, .-fl__ctx_switch

	.globl	fl__ctx_trampoline
	.hidden	fl__ctx_trampoline
	.type	fl__ctx_trampoline, @function
	.p2align 4
fl__ctx_trampoline:
	.cfi_startproc
	.cfi_undefined rip	/* end of the call chain for unwinders */
	movq	%rbx, %rdi
	/* rsp is 16-byte aligned here; call pushes 8 as the ABI expects */
	call	fl__fiber_entry
	ud2
	.cfi_endproc
	.size	fl__ctx_trampoline, .-fl__ctx_trampoline

#elif defined(__aarch64__)

	.text
	.globl	fl__ctx_switch
	.hidden	fl__ctx_switch
	.type	fl__ctx_switch, %function
	.p2align 4
fl__ctx_switch:
	/* x19-x28, fp (x29), lr (x30), d8-d15: 20 slots of 8 bytes = 160 */
	sub	sp, sp, #160
	stp	x19, x20, [sp, #0]
	stp	x21, x22, [sp, #16]
	stp	x23, x24, [sp, #32]
	stp	x25, x26, [sp, #48]
	stp	x27, x28, [sp, #64]
	stp	x29, x30, [sp, #80]
	stp	d8, d9, [sp, #96]
	stp	d10, d11, [sp, #112]
	stp	d12, d13, [sp, #128]
	stp	d14, d15, [sp, #144]
	mov	x2, sp
	str	x2, [x0]
	mov	sp, x1
	ldp	x19, x20, [sp, #0]
	ldp	x21, x22, [sp, #16]
	ldp	x23, x24, [sp, #32]
	ldp	x25, x26, [sp, #48]
	ldp	x27, x28, [sp, #64]
	ldp	x29, x30, [sp, #80]
	ldp	d8, d9, [sp, #96]
	ldp	d10, d11, [sp, #112]
	ldp	d12, d13, [sp, #128]
	ldp	d14, d15, [sp, #144]
	add	sp, sp, #160
	ret
	.size	fl__ctx_switch, .-fl__ctx_switch

	.globl	fl__ctx_trampoline
	.hidden	fl__ctx_trampoline
	.type	fl__ctx_trampoline, %function
	.p2align 4
fl__ctx_trampoline:
	mov	x0, x19
	mov	x29, #0		/* end of the frame chain */
	bl	fl__fiber_entry
	brk	#0
	.size	fl__ctx_trampoline, .-fl__ctx_trampoline

#else
#error "libfiberloop: no context switch for this architecture (x86-64 and aarch64 only)"
#endif

	.section .note.GNU-stack,"",%progbits
